import type { Socket } from 'node:net';
import { errorBody } from './errors';
import { newRequestId } from './requestId';

/**
 * Node answers a request it cannot parse (or whose headers are too slow or too big) with a bare
 * status line. We answer with the CONTRACT error body instead, so every answer a client can
 * read has a code and a request id.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || (err as { code?: string }).code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const id = newRequestId();
  const [status, reason, code, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', 'request.timeout', 'The request headers did not arrive in time.'] as const
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'request.malformed', 'The request headers are too large.'] as const
        : [400, 'Bad Request', 'request.malformed', 'The request is not valid HTTP/1.1.'] as const;
  const body = errorBody(code, message, id);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nX-Request-Id: ${id}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
