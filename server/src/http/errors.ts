import type { ServerResponse } from 'node:http';
import { sendJson } from './writers';
import { HttpError, type ErrorCode } from '../errors';
import type { Dialect } from './route';

export { HttpError, type ErrorCode } from '../errors';

export function errorBody(code: ErrorCode, message: string, requestId: string) {
  return { error: { code, message, request_id: requestId } };
}

export function sendError(res: ServerResponse, requestId: string, err: HttpError): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (err.closeConnection) res.setHeader('Connection', 'close');
  sendJson(res, err.status, errorBody(err.code, err.message, requestId), err.headers);
}

/** CONTRACT's error body: every route's dialect unless it names its own. */
export const contractDialect: Dialect = { sendError };

export const notFound = () => new HttpError(404, 'route.not_found', 'No such endpoint. Every endpoint DeskRelay serves is listed in its interface reference: https://github.com/deskrelay/deskrelay/tree/main/docs');

export const methodNotAllowed = (allowed: readonly string[]) =>
  new HttpError(405, 'route.method_not_allowed', `Use ${allowed.join(' or ')} for this endpoint.`, { Allow: allowed.join(', ') });

export const serverStopping = () => new HttpError(503, 'server.stopping', 'The desktop relay is shutting down. Try again once it has restarted.');

export const internalError = () => new HttpError(500, 'server.internal_error', 'The desktop relay hit an unexpected error. See its log on the desktop.');

/** The Host (or an absolute-form target's authority) names neither this machine nor an announced public hostname. */
export const hostNotAllowed = () =>
  new HttpError(400, 'request.invalid_header', 'The Host header does not name this relay. Use its loopback address, or the public URL it was paired with.', {}, true);
