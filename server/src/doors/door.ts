import type { RelayContext } from '../http/context';
import type { Route } from '../http/route';

/**
 * A door: one way in for clients (SPEC's SSE stream, resumable streams, the WebSocket, the
 * OpenAI API…). A door reads its own request shape, calls the chat service, and writes its own
 * wire format; state it keeps between requests (a resumable registry) lives in the door.
 */
export interface Door {
  readonly routes: readonly Route[];
  /** The relay is stopping and every chat was already cancelled: drop what the door holds. */
  stop?(): void;
}

/** Makes a relay's instance of a door. A new door is its own file plus one line in doors/index.ts. */
export type DoorFactory = (ctx: RelayContext) => Door;
