import type { IncomingMessage } from 'node:http';
import { admitToken, authenticate, missingToken, type Credentials, type Principal } from '../../http/admission';
import { HttpError } from '../../http/errors';
import { SOCKET_BEARER_PREFIX as BEARER_PREFIX, SOCKET_PROTOCOL } from '../../protocol';

/** The subprotocol the server selects; the token travels in a second one it never echoes. */
export { SOCKET_PROTOCOL };

export function offeredProtocols(req: IncomingMessage): string[] {
  const header = req.headers['sec-websocket-protocol'];
  if (header === undefined) return [];
  return header
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/**
 * The handshake's credentials: the `Authorization` header as on every route, or, for browsers
 * (whose WebSocket API cannot set headers), the subprotocols `deskrelay` and
 * `deskrelay.bearer.<token>`, as Kubernetes does. The header wins when both are sent.
 */
export function authenticateSocket(req: IncomingMessage, expected: string | Credentials): Principal {
  if (req.headers.authorization !== undefined) return authenticate(req, expected);
  const offered = offeredProtocols(req);
  const bearers = offered.filter((p) => p.startsWith(BEARER_PREFIX));
  if (bearers.length === 0) throw missingToken();
  const presented = bearers.length === 1 ? bearers[0].slice(BEARER_PREFIX.length) : undefined;
  // Compared even when ambiguous, so every refusal costs the same time.
  const principal = admitToken(presented, expected);
  if (!offered.includes(SOCKET_PROTOCOL)) {
    // The server must select a subprotocol the client offered, and must not select the token.
    throw new HttpError(
      400,
      'request.invalid_header',
      `The Sec-WebSocket-Protocol header must offer "${SOCKET_PROTOCOL}" alongside "${BEARER_PREFIX}<token>".`,
    );
  }
  return principal;
}
