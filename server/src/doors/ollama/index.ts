import type { ContextSlice } from '../context';
import type { DoorFactory } from '../door';
import { OLLAMA_ROUTES } from './routes';

export { OLLAMA_PREFIX } from './routes';

/** What the Ollama door reads of the relay: the chat service, bodies, request state; the version, and the keys for the model list. */
export type OllamaContext = ContextSlice<'chat' | 'bodies' | 'state', 'version' | 'keys' | 'providerIdleMs' | 'bodyTimeoutMs'>;

/** Ollama's API (chat, generate, tags, show, version), at the root and under /ollama, for apps that speak only Ollama. */
export const ollamaDoor: DoorFactory<OllamaContext> = () => ({ routes: OLLAMA_ROUTES });
