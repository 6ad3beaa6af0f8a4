import { agentDoor } from './agent';
import { chatDoor } from './chat';
import { conversationsDoor } from './conversations';
import type { ResolvedOptions } from './context';
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

/** A door's own options: those of its slice that are not the relay's core ones (the host sets them; the door reads them only). */
type OptionsOf<F> = F extends DoorFactory<infer C> ? (C extends { readonly options: infer O } ? Writable<Omit<O, keyof ResolvedOptions>> : never) : never;
type Writable<T> = { -readonly [K in keyof T]: T[K] };
type AllOf<U> = (U extends unknown ? (u: U) => void : never) extends (all: infer I) => void ? I : never;

/** Every door's own options together: the relay's options are its core ones and these. */
export type DoorOptions = AllOf<OptionsOf<(typeof DOORS)[number]>>;
