import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HttpError } from './errors';
import type { Credentials, Principal } from './admission';

/**
 * How a door words a refusal it did not get to answer itself (bad token, stopping relay, bad
 * body, our own bug…). The funnel renders every failure through the route's dialect, so an
 * OpenAI SDK sees OpenAI's error shape and a phone app CONTRACT's, from the same code path.
 */
export interface Dialect {
  /** Writes the whole refusal; the funnel has set X-Request-Id and decided whether to close. */
  sendError(res: ServerResponse, requestId: string, err: HttpError): void;
}

/** Checks the credentials of a request and says whose they are; throws the 401 HttpError when they do not match. */
export type Authenticator = (req: IncomingMessage, credentials: Credentials) => Principal;

/** A request as its route's handler gets it: the path's `:name` segments, decoded, in `params` (polka's). */
export interface RouteRequest extends IncomingMessage {
  readonly params: Readonly<Record<string, string>>;
}

/**
 * One endpoint of a door. The funnel runs request id → route (404, 405) → stopping → auth →
 * `handle`, and renders anything `handle` throws in the route's dialect. `C` is what the doors
 * hand their handlers (a door's slice of doors/context.ts's RelayContext); http only passes it along.
 */
export interface Route<C = unknown> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /**
   * The exact path. A segment written `:name` (polka's syntax) matches any one non-empty
   * segment (`/v1/providers/:id/models`); the handler reads it decoded from `req.params`. A path
   * that has routes of its own is never taken by a `:name` segment.
   */
  path: string;
  /** false: no token (health). true: the bearer token. A function: the door's own way (the WebSocket's subprotocol). */
  auth: boolean | Authenticator;
  /** Default: CONTRACT's error body. */
  dialect?: Dialect;
  /**
   * The route serves only requests carrying this header (lower case). When several routes share
   * a method and path, the first that takes the request serves it (resumable streams are
   * `POST /v1/chat/stream` with an Idempotency-Key). A header name, not a function, so the
   * funnel decides without running door code for requests the route does not take.
   */
  withHeader?: string;
  // Properties, not methods: TypeScript checks a method's parameters both ways, so a handler
  // could declare a wider context than its route's `C` and still be taken.
  handle: (req: RouteRequest, res: ServerResponse, ctx: C) => void | Promise<void>;
  /**
   * WebSocket routes: a `GET` carrying `Upgrade: websocket`, after the funnel admitted it
   * (stopping, auth). An HttpError thrown here is answered as a refused handshake (CONTRACT's
   * body on the raw socket), never a half-open socket.
   */
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer, ctx: C) => void;
}

/**
 * A route path as polka registers it: anchored and case-sensitive, with no optional trailing
 * slash (polka's string patterns allow both), each `:name` one non-empty segment, captured by
 * name, which polka puts, decoded, in `req.params`. `exact` are the paths that have routes of
 * their own: a `:name` segment never takes one of them (`/v1/conversations/events` is the
 * change feed, not a conversation named "events"), whatever the method.
 */
export function routePattern(path: string, exact: readonly string[] = []): RegExp {
  const source = (p: string) => p.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&');
  const body = source(path).replace(/\/:(\w+)/g, '/(?<$1>[^/]+)');
  const own = new RegExp(`^${body}$`);
  const taken = isPattern(path) ? exact.filter((p) => own.test(p)) : [];
  return taken.length === 0 ? own : new RegExp(`^(?!(?:${taken.map(source).join('|')})$)${body}$`);
}

/** True for a route path with a `:name` segment. */
export const isPattern = (path: string) => /\/:\w/.test(path);
