import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HttpError } from './errors';
import type { RelayContext } from './context';

/**
 * How a door words a refusal it did not get to answer itself (bad token, stopping relay, bad
 * body, our own bug…). The funnel renders every failure through the route's dialect, so an
 * OpenAI SDK sees OpenAI's error shape and a phone app CONTRACT's, from the same code path.
 */
export interface Dialect {
  /** Writes the whole refusal; the funnel has set X-Request-Id and decided whether to close. */
  sendError(res: ServerResponse, requestId: string, err: HttpError): void;
}

/** Checks the credentials of a request; throws the 401 HttpError when they do not match. */
export type Authenticator = (req: IncomingMessage, token: string) => void;

/**
 * One endpoint of a door. The funnel runs request id → route (404, 405) → stopping → auth →
 * `handle`, and renders anything `handle` throws in the route's dialect.
 */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** false: no token (health). true: the bearer token. A function: the door's own way (the WebSocket's subprotocol). */
  auth: boolean | Authenticator;
  /** Default: CONTRACT's error body. */
  dialect?: Dialect;
  /**
   * When several routes share a method and path, the first whose `accepts` passes serves the
   * request (resumable streams are `POST /v1/chat/stream` with an Idempotency-Key).
   */
  accepts?(req: IncomingMessage): boolean;
  handle(req: IncomingMessage, res: ServerResponse, ctx: RelayContext): void | Promise<void>;
  /**
   * WebSocket routes: a `GET` carrying `Upgrade: websocket`, after the funnel admitted it
   * (stopping, auth). An HttpError thrown here is answered as a refused handshake (CONTRACT's
   * body on the raw socket), never a half-open socket.
   */
  upgrade?(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RelayContext): void;
}
