import type { Socket } from 'node:net';
import { errorBody } from './errors';
import { writeJsonToSocket } from './writers';
import { newRequestId } from './request';

/**
 * Node answers a request it cannot parse (or whose headers are too slow or too big) with a bare
 * status line. We answer with the CONTRACT error body instead, so every answer a client can
 * read has a code and a request id.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const id = newRequestId();
  const [status, code, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? ([408, 'request.timeout', 'The request did not arrive in time.'] as const)
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? ([431, 'request.malformed', 'The request headers are too large.'] as const)
        : ([400, 'request.malformed', 'The request is not valid HTTP/1.1.'] as const);
  writeJsonToSocket(socket, status, errorBody(code, message, id), { 'X-Request-Id': id });
}
