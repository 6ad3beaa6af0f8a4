import type { IncomingMessage, ServerResponse } from 'node:http';
import polka from 'polka';
import { authenticate } from './auth';
import type { RelayContext, Route } from './context';
import { HttpError, internalError, methodNotAllowed, notFound, sendError, serverStopping } from './errors';
import { newRequestId } from './requestId';
import { sseStreamOf } from './sse';
import { webClient } from './static';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The request pipeline: request id → exact route match (404, 405) → stopping → auth → handler.
 * Routes match their path exactly (no case folding, no trailing slash), so a path that is
 * not one of ours is a 404 rather than a guess.
 */
export function createApp(ctx: RelayContext, routes: readonly Route[]): Handler {
  const byPath = new Map<string, Map<string, Route>>();
  for (const route of routes) {
    if (!byPath.has(route.path)) byPath.set(route.path, new Map());
    byPath.get(route.path)!.set(route.method, route);
  }

  const app = polka({
    onError(err: unknown, req, res) {
      const id = ctx.state(req).id;
      if (!(err instanceof HttpError)) {
        ctx.options.logger.error(`request ${id} failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
      }
      const stream = res.headersSent ? sseStreamOf(res) : undefined;
      // A stream already under way can only end with its one terminal event, never a stack trace.
      if (stream) return stream.error(err instanceof HttpError ? err.message : internalError().message);
      sendError(res, id, err instanceof HttpError ? err : internalError());
    },
    onNoMatch(req, res) {
      sendError(res, ctx.state(req).id, notFound());
    },
  });

  app.use((req, res, next) => {
    const state = ctx.state(req);
    res.setHeader('X-Request-Id', state.id);
    const log = ctx.options.onRequestLog;
    if (log) {
      res.once('close', () =>
        log({ method: req.method ?? '', path: req.path, status: res.statusCode, durationMs: Date.now() - state.startedAt, provider: state.provider }),
      );
    }
    // HTTP/1.1 requires Host (RFC 9112 §3.2); the server lets it through so the answer carries our error body.
    if (req.headers.host === undefined && req.httpVersion === '1.1') {
      return sendError(res, state.id, new HttpError(400, 'request.malformed', 'The request has no Host header.', {}, true));
    }
    next();
  });

  // The phone web client at `/` (GET/HEAD outside /v1 only; what it lacks falls through to the 404).
  const web = webClient();
  if (web) app.use(web);

  app.use(async (req, res, next) => {
    const methods = byPath.get(req.path);
    if (!methods) return next();
    const route = methods.get(req.method);
    if (!route) throw methodNotAllowed([...methods.keys()]);
    if (ctx.stopping) throw serverStopping();
    if (route.auth) {
      const token = ctx.token;
      if (token === undefined) throw serverStopping();
      (typeof route.auth === 'function' ? route.auth : authenticate)(req, token);
    }
    await route.handle(req, res, ctx);
  });

  return (req, res) => {
    // A new id per request, fixed before anything can fail, so every answer carries it.
    requestStates.set(req, { id: newRequestId(), startedAt: Date.now() });
    app.handler(req as never, res, undefined as never);
  };
}

const requestStates = new WeakMap<IncomingMessage, { id: string; startedAt: number; provider?: string }>();

export function requestState(req: IncomingMessage) {
  let state = requestStates.get(req);
  if (!state) {
    state = { id: newRequestId(), startedAt: Date.now() };
    requestStates.set(req, state);
  }
  return state;
}
