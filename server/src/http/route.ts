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

/**
 * One endpoint of a door. The funnel runs request id → route (404, 405) → stopping → auth →
 * `handle`, and renders anything `handle` throws in the route's dialect. `C` is what the doors
 * hand their handlers (doors/context.ts's RelayContext); http only passes it along.
 */
export interface Route<C = unknown> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /**
   * The exact path. A segment written `{name}` matches any one non-empty segment
   * (`/v1/providers/{id}/models`); the handler reads it with `pathParam`. Exact paths win.
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
  handle(req: IncomingMessage, res: ServerResponse, ctx: C): void | Promise<void>;
  /**
   * WebSocket routes: a `GET` carrying `Upgrade: websocket`, after the funnel admitted it
   * (stopping, auth). An HttpError thrown here is answered as a refused handshake (CONTRACT's
   * body on the raw socket), never a half-open socket.
   */
  upgrade?(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: C): void;
}

/** The segments a `{name}` route path matched, decoded; undefined when the path does not match. */
export function pathParams(pattern: string, path: string): Record<string, string> | undefined {
  const names: string[] = [];
  const source = pattern.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{(\w+)\\?\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  const match = new RegExp(`^${source}$`).exec(path);
  if (!match) return undefined;
  const params: Record<string, string> = {};
  try {
    names.forEach((name, i) => (params[name] = decodeURIComponent(match[i + 1])));
  } catch {
    return undefined;
  }
  return params;
}

/** The `{name}` segments of a request's path (its query left out) under a route's pattern; {} when it does not match. */
export const requestParams = (pattern: string, req: IncomingMessage): Record<string, string> => pathParams(pattern, (req.url ?? '').split('?', 1)[0]!) ?? {};

/** True for a route path with a `{name}` segment. */
export const isPattern = (path: string) => /\{\w+\}/.test(path);
