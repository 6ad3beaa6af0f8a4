/**
 * Every path of every door (docs/http-api.md), as the relay registers it and the web client calls
 * it. A path with parameters is a template (`:id`); `pathTo` fills it in, each value URL-encoded.
 * One frozen object per door, each in its subject's file (agent.ts, conversations.ts, devices.ts,
 * push.ts, chat.ts for the OpenAI and Ollama doors; SPEC's and the providers' here): the web client imports only the files it calls, so a door's
 * paths load with the screens that use them (a bundler drops unused objects, not unused entries,
 * and places code by file). `PATHS` (index.ts) is every door's, for the relay and the tests.
 */

/** SPEC's door (CONTRACT §4). */
export const CHAT_PATHS = /* @__PURE__ */ Object.freeze({
  health: '/v1/health',
  info: '/v1/remote/info',
  /** POST: the chat as SSE; with `Idempotency-Key` a resumable stream. */
  chatStream: '/v1/chat/stream',
  /** POST with the `Idempotency-Key` of a resumable reply: stops its generation. */
  chatCancel: '/v1/chat/cancel',
  /** GET with `Upgrade: websocket`: one chat per socket. */
  chatSocket: '/v1/chat/ws',
});

/** Providers (issue 13). */
export const PROVIDER_PATHS = /* @__PURE__ */ Object.freeze({
  providers: '/v1/providers',
  providersActive: '/v1/providers/active',
  providerModels: '/v1/providers/:id/models',
});

/** A template's path with its `:name` parameters filled in, each URL-encoded (a missing one is empty). */
export function pathTo(template: string, params: Readonly<Record<string, string>>): string {
  return template.replace(/:([A-Za-z]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

/** Request headers of the resumable stream, as spelled on the wire. */
export const HEADERS = /* @__PURE__ */ Object.freeze({
  idempotencyKey: 'Idempotency-Key',
  lastEventId: 'Last-Event-ID',
});

/** What an `Idempotency-Key` may look like (and so what a client must generate). */
export const IDEMPOTENCY_KEY_RE = /^[A-Za-z0-9_-]{8,128}$/;
/** What a `Last-Event-ID` may look like: the number of an `id:` line. */
export const EVENT_ID_RE = /^[0-9]{1,15}$/;

/**
 * Browsers cannot set headers on a WebSocket handshake: the token travels as a second offered
 * subprotocol, `deskrelay.bearer.<token>`, beside `deskrelay`, the one the relay selects (it never
 * selects, and so never echoes, the token's).
 */
export const SOCKET_PROTOCOL = 'deskrelay';
export const SOCKET_BEARER_PREFIX = 'deskrelay.bearer.';

/** Close codes of the chat socket. */
export const SOCKET_CLOSE = /* @__PURE__ */ Object.freeze({
  /** After the terminal `done`/`error` event. */
  normal: 1000,
  /** The relay stopped before a request came. */
  goingAway: 1001,
  /** After an `error` event refusing the request itself; the reason is the error code. */
  policy: 1008,
});
