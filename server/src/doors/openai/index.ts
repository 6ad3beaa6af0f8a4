import type { DoorFactory } from '../door';
import { OPENAI_ROUTES } from './routes';

/** OpenAI's chat completions and model list, for OpenAI SDKs and tools. */
export const openAiDoor: DoorFactory = () => ({ routes: OPENAI_ROUTES });
