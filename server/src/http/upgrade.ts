import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody, type HttpError } from './errors';
import { writeJsonToSocket } from './writers';

/**
 * Hands an upgrade request we do not serve back to the plain HTTP pipeline. Once a server has an
 * `upgrade` listener, Node sends every request carrying `Upgrade` there (curl --http2 sends
 * `Upgrade: h2c` on a POST /v1/chat/stream), so without this such requests would lose their
 * normal answer. A server may ignore Upgrade (RFC 9110 §7.8): the request head is rebuilt
 * without it, put back in front of the unread bytes, and the socket starts over as a new
 * HTTP connection.
 */
export function declineUpgrade(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  if (socket.destroyed) return;
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i];
    let value = req.rawHeaders[i + 1];
    const lower = name.toLowerCase();
    if (lower === 'upgrade') continue;
    if (lower === 'connection') {
      value = value
        .split(',')
        .map((token) => token.trim())
        .filter((token) => token !== '' && token.toLowerCase() !== 'upgrade')
        .join(', ');
      if (value === '') continue;
    }
    lines.push(`${name}: ${value}`);
  }
  socket.unshift(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]));
  server.emit('connection', socket);
}

/** Refuses a handshake with the CONTRACT error body, as a plain HTTP response, and closes the socket. */
export function refuseUpgrade(socket: Duplex, requestId: string, err: HttpError): void {
  if (!socket.writable) return void socket.destroy();
  writeJsonToSocket(socket, err.status, errorBody(err.code, err.message, requestId), { ...err.headers, 'X-Request-Id': requestId });
  socket.once('finish', () => socket.destroy());
}
