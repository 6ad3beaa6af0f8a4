import type { ServerResponse } from 'node:http';

/** Every machine-readable code a DeskRelay response can carry (CONTRACT §3). */
export type ErrorCode =
  | 'auth.missing_token'
  | 'auth.invalid_token'
  | 'route.not_found'
  | 'route.method_not_allowed'
  | 'request.unsupported_media_type'
  | 'request.body_too_large'
  | 'request.timeout'
  | 'request.malformed'
  | 'request.invalid_json'
  | 'request.invalid_body'
  | 'request.invalid_header'
  | 'request.upgrade_required'
  | 'chat.no_provider'
  | 'chat.too_many_streams'
  | 'chat.idempotency_conflict'
  | 'server.stopping'
  | 'server.internal_error';

/** A failure that becomes the CONTRACT error body. Its message is shown to users, so it must be safe. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Close the connection after answering, instead of reading what the client still sends. */
    readonly closeConnection = false,
  ) {
    super(message);
  }
}

export function errorBody(code: ErrorCode, message: string, requestId: string): string {
  return JSON.stringify({ error: { code, message, request_id: requestId } });
}

export function sendError(res: ServerResponse, requestId: string, err: HttpError): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = errorBody(err.code, err.message, requestId);
  res.statusCode = err.status;
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.setHeader('Cache-Control', 'no-store');
  if (err.closeConnection) res.setHeader('Connection', 'close');
  res.end(body);
}

export const notFound = () => new HttpError(404, 'route.not_found', 'No such endpoint. DeskRelay serves GET /v1/health, GET /v1/remote/info and POST /v1/chat/stream.');

export const methodNotAllowed = (allowed: readonly string[]) =>
  new HttpError(405, 'route.method_not_allowed', `Use ${allowed.join(' or ')} for this endpoint.`, { Allow: allowed.join(', ') });

export const serverStopping = () => new HttpError(503, 'server.stopping', 'The desktop relay is shutting down. Try again once it has restarted.');

export const internalError = () => new HttpError(500, 'server.internal_error', 'The desktop relay hit an unexpected error. See its log on the desktop.');
