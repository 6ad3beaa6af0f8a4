import type { DoorFactory } from './door';
import { resumableDoor } from './resumable';
import { chatSocketRoute } from './ws/chatSocket';
import { OPENAI_ROUTES } from './openai/routes';
import { ollamaDoor } from './ollama/routes';
import { providersDoor } from './providers';
import { pushDoor } from './push';
import { chatStreamRoute } from './spec/chatStream';
import { healthRoute } from './spec/health';
import { infoRoute } from './spec/info';

/** Every door of the relay, in the order their routes are matched. A new door is one line here. */
export const DOORS: readonly DoorFactory[] = [
  // Before SPEC's stream: it serves the same path when the request carries an Idempotency-Key.
  resumableDoor,
  () => ({ routes: [healthRoute, infoRoute, chatStreamRoute] }),
  () => ({ routes: [chatSocketRoute] }),
  () => ({ routes: OPENAI_ROUTES }),
  ollamaDoor,
  providersDoor,
  pushDoor,
];
