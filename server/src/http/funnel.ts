import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import polka from 'polka';
import type { Middleware, Request as PolkaRequest } from 'polka';
import { authenticate, type AdmissionState, type HostPolicy } from './admission';
import type { DeviceHolds } from './deviceHolds';
import { contractDialect, HttpError, hostNotAllowed, internalError, methodNotAllowed, notFound, serverStopping } from './errors';
import { freshState, requestState, type FunnelState, type RequestLog, type Unfinished } from './request';
import { isPattern, routePattern, type Route } from './route';
import { webClient } from './static';
import type { Logger } from '../logger';
import { declineUpgrade, refuseUpgrade } from './upgrade';

/** The server's three ways in: a request, a request with `Expect: 100-continue`, an upgrade. */
export interface Funnel {
  request(req: IncomingMessage, res: ServerResponse): void;
  checkContinue(req: IncomingMessage, res: ServerResponse): void;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface FunnelParts {
  server: Server;
  hosts: HostPolicy;
  log: RequestLog;
  /** What each device holds open, so its removal ends it all (none in a funnel built without devices). */
  holds?: DeviceHolds;
}

export { requestState };

/**
 * What the funnel needs from the relay: the admission in force, where its own failures are
 * logged, and the context a request's handler gets (the doors' own type, which http only passes
 * along), per device: the session gives a device's request a context whose chat service is that
 * device's view.
 */
export interface FunnelGate<C> {
  readonly admission: Readonly<AdmissionState>;
  readonly logger: Logger;
  /** What a request admitted without a device (the pairing or the desk token) gets. */
  readonly context: C;
  /** What a device's request gets (the session: one whose chat service is that device's view). */
  contextFor(device: string): C;
  /** A failure as a refusal (the doors' own errors, chat's ChatError, in HTTP terms); undefined for a bug, answered 500. */
  refusal(err: unknown): HttpError | undefined;
}

/**
 * The one admission funnel. Every request and every WebSocket upgrade goes through the same
 * steps: request id → Host → route (404, 405) → stopping (503) → auth (401) → the route. Every
 * failure is rendered by one function in the route's dialect, so no door admits a request its
 * own way. Routes match their path exactly (no case folding, no trailing slash), so a path that
 * is not one of ours is a 404 rather than a guess.
 *
 * polka routes: every route is registered on it, its router finds the handlers and fills
 * `req.params`, its `onNoMatch` and `onError` feed `fail`. Where polka's order differs from
 * ours, the funnel keeps ours:
 * - request id and Host come before polka sees the request (polka has no step before routing,
 *   and an absolute-form target must be rewritten before polka parses the path);
 * - stopping and auth run inside each route's polka handler, after the route matched, because
 *   a 404/405 is answered without a token (polka's middleware would run before routing);
 * - polka has no 405: when no route took the request, `onNoMatch` asks polka which methods
 *   the path has (405 with Allow), else it is a 404 (a route that did not take the request);
 * - polka's string patterns allow a trailing slash and fold case: each route is registered as
 *   an anchored RegExp (`routePattern`), whose `:name` segments never take a path that has
 *   routes of its own.
 */
export function createFunnel<C>(gate: FunnelGate<C>, routes: readonly Route<C>[], { server, hosts, log, holds }: FunnelParts): Funnel {
  const exact = [...new Set(routes.map((r) => r.path).filter((p) => !isPattern(p)))];
  const patterns = new Map(routes.map((r) => [r.path, routePattern(r.path, exact)]));
  // The methods a 405 may name, in one order for every path.
  const methods = ROUTE_METHODS.filter((m) => routes.some((r) => r.method === m));
  const upgrades = routes.filter((r) => r.upgrade);
  const web = webClient();

  const app = polka<PolkaRequest>({
    server,
    onNoMatch(req, res) {
      // polka found no route that took it: the path's other methods are its 405.
      const allowed = decodes(req.path) ? methods.filter((m) => app.find(m, req.path).handlers.length > 0) : [];
      // The phone web client at `/` (GET/HEAD outside /v1 only; what it lacks is the 404).
      if (allowed.length === 0) {
        if (web) return web(req, res, () => fail(req, res, notFound()));
        throw notFound();
      }
      // Routes of this method declined it (a header they need, HEAD on a route with a token): a 404 or the 405.
      if ((allowed as readonly string[]).includes(req.method)) throw notFound();
      throw methodNotAllowed(allowed);
    },
    onError: (err, req, res) => fail(req, res, err),
  });
  // Routes sharing a method and path are one polka route, tried in the given order (polka runs
  // each handler until one answers): one pattern less for polka to test on every such request.
  const samePath = new Map<string, Route<C>[]>();
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    samePath.set(key, [...(samePath.get(key) ?? []), route]);
  }
  for (const list of samePath.values()) app.add(list[0]!.method, patterns.get(list[0]!.path)!, ...list.map(handlerOf));

  function handlerOf(route: Route<C>): Middleware<PolkaRequest> {
    const hasParams = isPattern(route.path);
    // A HEAD is answered like GET only on a path with a GET that needs no token (the health probe).
    const headAsGet = routes.some((r) => r.path === route.path && r.method === 'GET' && r.auth === false);
    // Not async: it returns the route's promise, where awaiting it kept one more suspended frame
    // per held stream. polka calls it from an async function, so a throw here still reaches onError.
    return (req, res, next) => {
      if (req.method === 'HEAD' && !headAsGet) return next();
      // A segment that is no percent-encoded text (polka leaves it as it came) names nothing of ours.
      if (hasParams && !decodes(req.path)) return next();
      if (!takes(route, req)) return next();
      const state = requestState(req);
      state.dialect = route.dialect;
      state.authenticated = admit(req, route);
      if (state.device !== undefined) holds?.add(state.device, res);
      // Only an admitted request is invited to send its body.
      if (state.expectsContinue) res.writeContinue();
      return route.handle(req, res, state.device === undefined ? gate.context : gate.contextFor(state.device));
    };
  }

  /**
   * Responses not yet finished, per connection. Node queues a pipelined request's response on
   * the connection's current parser state; a declined upgrade starts the connection over with a
   * new one, so it waits until every earlier response is out, or the next answer would wait
   * behind a queue nobody drains (a second pipelined Upgrade got no answer).
   */
  const unfinished = new WeakMap<Duplex, Unfinished>();
  function track(req: IncomingMessage, state: FunnelState): void {
    let entry = unfinished.get(req.socket);
    if (!entry) unfinished.set(req.socket, (entry = { count: 0, waiting: [] }));
    entry.count++;
    state.unfinished = entry;
  }

  /**
   * A response closed (once each): its connection's count first, then its log line. One listener
   * shared by every request, which finds what it needs on the request state, not two closures
   * per request: each held stream kept both, their contexts and `once`'s wrappers alive
   * (per-stream heap, bench/NOTES.md).
   */
  function closed(this: ServerResponse): void {
    const req = this.req;
    const state = requestState(req);
    const mine = state.unfinished;
    if (mine && --mine.count === 0) for (const run of mine.waiting.splice(0)) run();
    if (state.device !== undefined) holds?.delete(state.device, this);
    // Whatever answered it stops (the client went away), or was done already (then abort does nothing).
    state.abortOnClose?.abort();
    log.line(
      {
        method: req.method ?? '',
        path: state.path,
        status: this.statusCode,
        durationMs: Date.now() - state.startedAt,
        provider: state.provider,
        device: state.device,
      },
      state.authenticated,
    );
  }
  function whenAnswered(socket: Duplex, run: () => void): void {
    const entry = unfinished.get(socket);
    if (!entry || entry.count === 0) return run();
    entry.waiting.push(run);
  }

  function fail(req: IncomingMessage, res: ServerResponse, err: unknown): void {
    const { id, dialect = contractDialect, writer } = requestState(req);
    const refusal = err instanceof HttpError ? err : gate.refusal(err);
    if (!refusal) {
      gate.logger.error(`request ${id} failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    }
    if (res.headersSent && dialect === contractDialect) {
      // A stream already under way can only end with its one terminal event, never a stack trace.
      if (writer?.error) writer.error((refusal ?? internalError()).message);
      else res.end();
      return;
    }
    const httpError = refusal ?? internalError();
    // Whatever body the client still sends is not read: a connection that stayed open would let
    // a client without the token push data (or trickle it) for as long as the server allows.
    if (httpError.closeConnection || bodyUnread(req)) res.setHeader('Connection', 'close');
    dialect.sendError(res, id, httpError);
  }

  /** Stopping and auth for one request; returns whether a token was checked. The device it names goes on the request state. */
  function admit(req: IncomingMessage, route: Route<C>): boolean {
    const admission = gate.admission;
    if (admission.stopping) throw serverStopping();
    if (!route.auth) return false;
    const token = admission.token;
    if (token === undefined) throw serverStopping();
    const { device } = (typeof route.auth === 'function' ? route.auth : authenticate)(req, { pairing: token, devices: admission.devices, desk: admission.deskToken });
    if (device !== undefined) requestState(req).device = device;
    return true;
  }

  function serve(req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): void {
    const state = freshState(req, expectsContinue);
    track(req, state);
    res.setHeader('X-Request-Id', state.id);
    const target = targetOf(req);
    state.path = target.path;
    res.on('close', closed);
    try {
      checkHost(req, target, hosts);
    } catch (err) {
      return fail(req, res, err);
    }
    // polka routes it (synchronously: a handler runs before this returns) and answers every failure through `fail`.
    void app.handler(req as PolkaRequest, res, undefined as never);
  }

  return {
    request: (req, res) => serve(req, res, false),
    checkContinue: (req, res) => serve(req, res, true),
    upgrade(req, socket, head) {
      const target = targetOf(req);
      const wantsSocket = req.method === 'GET' && req.headers.upgrade?.toLowerCase() === 'websocket';
      // polka sees requests, not upgrades: the routes that take a WebSocket are looked for here.
      const route = wantsSocket ? upgrades.find((r) => r.method === 'GET' && patterns.get(r.path)!.test(target.path) && takes(r, req)) : undefined;
      // An Upgrade we do not serve (h2c on a POST…) is answered as the plain request it also is.
      if (!route?.upgrade) return whenAnswered(socket, () => declineUpgrade(server, req, socket, head));

      const state = freshState(req);
      socket.on('error', () => socket.destroy());
      try {
        checkHost(req, target, hosts);
        state.authenticated = admit(req, route);
        if (state.device !== undefined) holds?.addSocket(state.device, socket);
        route.upgrade(req, socket, head, state.device === undefined ? gate.context : gate.contextFor(state.device));
      } catch (err) {
        const known = err instanceof HttpError ? err : gate.refusal(err);
        if (!known) gate.logger.error(`websocket handshake ${state.id} failed: ${err instanceof Error ? err.name : typeof err}`);
        const refusal = known ?? internalError();
        refuseUpgrade(socket, state.id, refusal);
        log.line({ method: 'GET', path: target.path, status: refusal.status, durationMs: Date.now() - state.startedAt }, state.authenticated);
      }
    },
  };
}

/** Whether a route takes a request its method and path fit (its `withHeader`). */
function takes(route: Pick<Route, 'withHeader'>, req: IncomingMessage): boolean {
  return route.withHeader === undefined || req.headers[route.withHeader] !== undefined;
}

/** True while the request announced a body that has not fully arrived. */
function bodyUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

const ROUTE_METHODS: readonly Route['method'][] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** False for a path with an escape that is no percent-encoded UTF-8 (`%E0%A4%A`). */
function decodes(path: string): boolean {
  if (path.indexOf('%') === -1) return true;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

interface Target {
  path: string;
  /** The authority of an absolute-form target (`GET http://host/path`), which stands in for Host. */
  authority?: string;
}

/**
 * The path of the request target in any of its forms. An absolute-form target is rewritten to
 * origin-form, so the web client and handlers see one shape, and its authority is checked
 * instead of Host (RFC 9112 §3.2.2). `OPTIONS *` keeps `*`, a path no route has.
 */
function targetOf(req: IncomingMessage): Target {
  const url = req.url ?? '/';
  // Origin-form (`/path`), what nearly every request sends, needs no RegExp.
  if (url.startsWith('/')) return { path: pathOf(url) };
  const absolute = /^https?:\/\/([^/?#]*)(.*)$/is.exec(url);
  if (!absolute) return { path: pathOf(url) };
  const rest = absolute[2].startsWith('/') ? absolute[2] : `/${absolute[2]}`;
  req.url = rest;
  return { path: pathOf(rest), authority: absolute[1] };
}

function pathOf(url: string): string {
  let end = url.length;
  const query = url.indexOf('?', 1);
  if (query !== -1) end = query;
  const fragment = url.indexOf('#', 1);
  if (fragment !== -1 && fragment < end) end = fragment;
  return end === url.length ? url : url.slice(0, end);
}

function checkHost(req: IncomingMessage, target: Target, hosts: HostPolicy): void {
  let count = 0;
  // Only a four-letter name is lower-cased to compare (no new string per header).
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].length === 4 && req.rawHeaders[i].toLowerCase() === 'host') count++;
  if (count > 1) throw new HttpError(400, 'request.malformed', 'The request has more than one Host header.', {}, true);
  const authority = target.authority ?? req.headers.host;
  if (authority === undefined) {
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node lets it through so the answer carries our error body.
    if (req.httpVersion === '1.1') throw new HttpError(400, 'request.malformed', 'The request has no Host header.', {}, true);
    return;
  }
  if (!hosts.allows(authority)) throw hostNotAllowed();
}
