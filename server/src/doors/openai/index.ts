import type { ContextSlice } from '../context';
import type { DoorFactory } from '../door';
import { OPENAI_ROUTES } from './routes';

/** What the OpenAI door reads of the relay: the chat service, bodies, request state; the providers and their keys for the model list. */
export type OpenAiContext = ContextSlice<'chat' | 'bodies' | 'state', 'providers' | 'keys' | 'providerIdleMs' | 'bodyTimeoutMs' | 'keepAliveMs'>;

/** OpenAI's chat completions and model list, for OpenAI SDKs and tools. */
export const openAiDoor: DoorFactory<OpenAiContext> = () => ({ routes: OPENAI_ROUTES });
