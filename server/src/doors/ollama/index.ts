import type { DoorFactory } from '../door';
import { OLLAMA_ROUTES } from './routes';

export { OLLAMA_PREFIX } from './routes';

/** Ollama's API (chat, generate, tags, show, version), at the root and under /ollama, for apps that speak only Ollama. */
export const ollamaDoor: DoorFactory = () => ({ routes: OLLAMA_ROUTES });
