import { agentDoor } from './agent';
import { chatDoor } from './chat';
import { conversationsDoor } from './conversations';
import type { DoorFactory } from './door';
import { devicesDoor } from './devices';
import { ollamaDoor } from './ollama';
import { openAiDoor } from './openai';
import { providersDoor } from './providers';
import { pushDoor } from './push';
import { resumableDoor } from './resumable';
import { transcriptionDoor } from './transcription';
import { socketDoor } from './ws';

/** Every door of the relay, in the order their routes are matched. A new door is one line here. */
export const DOORS = [
  // Before SPEC's stream: it serves the same path when the request carries an Idempotency-Key.
  resumableDoor,
  chatDoor,
  socketDoor,
  openAiDoor,
  ollamaDoor,
  providersDoor,
  pushDoor,
  transcriptionDoor,
  devicesDoor,
  agentDoor,
  conversationsDoor,
] as const satisfies readonly DoorFactory<never>[];

type OptionsOf<F> = F extends DoorFactory<infer O> ? O : never;
type AllOf<U> = (U extends unknown ? (u: U) => void : never) extends (all: infer I) => void ? I : never;

/** Every door's own options together: the relay's options are its core ones and these. */
export type DoorOptions = AllOf<OptionsOf<(typeof DOORS)[number]>>;
