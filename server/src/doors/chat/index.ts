import type { DoorFactory } from '../door';
import { chatStreamRoute } from './chatStream';
import { healthRoute } from './health';
import { infoRoute } from './info';

/** The chat door (SPEC's own endpoints): the health probe, the pairing check and the chat stream. */
export const chatDoor: DoorFactory = () => ({ routes: [healthRoute, infoRoute, chatStreamRoute] });
