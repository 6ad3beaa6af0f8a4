import type { ContextSlice } from '../context';
import type { DoorFactory } from '../door';
import { chatStreamRoute } from './chatStream';
import { healthRoute } from './health';
import { infoRoute } from './info';

/** What the chat door reads of the relay: the chat service, bodies and request state for the stream; what the probes report. */
export type ChatDoorContext = ContextSlice<'chat' | 'bodies' | 'state', 'version' | 'providers' | 'workspaces' | 'bodyTimeoutMs' | 'keepAliveMs'>;

/** The chat door (SPEC's own endpoints): the health probe, the pairing check and the chat stream. */
export const chatDoor: DoorFactory<ChatDoorContext> = () => ({ routes: [healthRoute, infoRoute, chatStreamRoute] });
