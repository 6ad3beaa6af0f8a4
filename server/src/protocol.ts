/**
 * The wire protocol between the relay and its clients, in one place: the relay's doors and the
 * phone web client (web/src) both import it, so they cannot drift apart. Pure constants and
 * types: no Node imports, nothing that runs (the browser bundle includes this file as it is).
 */

/** The routes a SPEC client uses. */
export const PATHS = Object.freeze({
  health: '/v1/health',
  info: '/v1/remote/info',
  /** POST: the chat as SSE; with `Idempotency-Key` a resumable stream. */
  chatStream: '/v1/chat/stream',
  /** POST with the `Idempotency-Key` of a resumable reply: stops its generation. */
  chatCancel: '/v1/chat/cancel',
  /** GET with `Upgrade: websocket`: one chat per socket. */
  chatSocket: '/v1/chat/ws',
  /** GET: the desktop's VAPID public key for Web Push (issue 15). */
  pushKey: '/v1/push/key',
  /** POST a browser's PushSubscription JSON; DELETE `{"endpoint"}`. */
  pushSubscriptions: '/v1/push/subscriptions',
  /** POST `{"name"}` with the pairing token: registers this client as a device (issue 26); GET lists them. */
  devices: '/v1/devices',
  /** POST `{"code","name","publicKey"?}` with no token: pairs with the desk's one-time code (issue 36). */
  deviceClaim: '/v1/devices/claim',
});

/** A device token (issue 26) starts with this; the pairing token with `dr_`. */
export const DEVICE_TOKEN_PREFIX = 'drd_';

/** `POST /v1/devices`'s answer: the device's id and its own token (a secret, shown once). */
export interface DeviceRegistration {
  id: string;
  token: string;
}

/** One entry of `GET /v1/devices`. Times are ISO 8601; `current` marks the device asking. */
export interface DeviceInfo {
  id: string;
  name: string;
  createdAt: string;
  lastSeen: string;
  connected: boolean;
  current: boolean;
  /** The device registered a public key (its agent decisions can be signed). */
  hasKey: boolean;
  /** The desk allowed it the agent (true), denied it or was never asked (false), or its request waits for the desk ("pending"). */
  agent: boolean | 'pending';
}

/** What a revoked device's open streams and sockets end with, and what its client shows. */
export const DEVICE_REMOVED_MESSAGE = 'The desktop removed this device; scan the pairing code again.';

/** The decrypted payload of a push (issue 15): which reply is ready, and whether it ended well. Never the reply's text. */
export interface ReplyReadyPush {
  type: 'reply_ready';
  idempotencyKey: string;
  ok: boolean;
}

/** Request headers of the resumable stream, as spelled on the wire. */
export const HEADERS = Object.freeze({
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
export const SOCKET_CLOSE = Object.freeze({
  /** After the terminal `done`/`error` event. */
  normal: 1000,
  /** The relay stopped before a request came. */
  goingAway: 1001,
  /** After an `error` event refusing the request itself; the reason is the error code. */
  policy: 1008,
});

/**
 * The event vocabulary of a reply (SSE `data:` lines, resumable SSE with numbered `id:` lines,
 * WebSocket text messages): zero or more `token` events, then exactly one `done` or `error`.
 */
export type TokenEvent = { type: 'token'; delta: string };
export type DoneEvent = { type: 'done'; content: string };
export type ErrorEvent = { type: 'error'; message: string };
export type TerminalEvent = DoneEvent | ErrorEvent;
export type ChatEvent = TokenEvent | TerminalEvent;

export type Role = 'system' | 'user' | 'assistant';
/** The body of `POST /v1/chat/stream` and the first message on the chat socket. */
export interface ChatRequestBody {
  messages: { role: Role; content: string }[];
}

/** A refusal's JSON body (every non-2xx answer of the relay). */
export interface ErrorBody {
  error: { code: string; message: string };
}

/** `GET /v1/remote/info`. */
export interface RemoteInfo {
  service: 'deskrelay';
  version: string;
  hostname: string;
  providerConfigured?: boolean;
}

/** The workspace agent's session states (docs/agent.md). */
export type AgentStatus = 'running' | 'waiting' | 'idle' | 'stopped' | 'failed';

/** One event of an agent session's stream (`GET /v1/agent/sessions/<id>/events`), numbered by its `id:` line. */
export type AgentEvent =
  | { type: 'user'; text: string }
  | { type: 'text'; delta: string }
  | { type: 'tool_call'; callId: string; tool: string; input: Record<string, unknown> }
  | { type: 'approval'; callId: string; tool: string; input: Record<string, unknown>; diff?: string; command?: string; digest: string; reason?: string }
  | { type: 'decision'; callId: string; decision: 'allow' | 'deny' | 'allow_session'; note?: string }
  | { type: 'tool_result'; callId: string; ok: boolean; output: string; denied?: boolean; diff?: string }
  | { type: 'queued'; text: string }
  | { type: 'reverted'; callId: string; path: string }
  | { type: 'status'; status: AgentStatus }
  | { type: 'error'; message: string }
  /** The conversation was made to fit the model's context: old tool results `dropped` (one note each), or the earlier steps `summarised`. */
  | { type: 'context'; message: string; dropped?: string[]; summarised?: boolean }
  // From ACP agents only (docs/agent.md, "ACP agents"):
  | { type: 'thinking'; delta: string }
  | { type: 'plan'; entries: AgentPlanEntry[] }
  | { type: 'commands'; commands: AgentCommand[] }
  | { type: 'modes'; current: string; modes: AgentChoice[] }
  | { type: 'models'; current: string; models: AgentChoice[] };

/** One step of an ACP agent's plan, as its checklist shows it. */
export interface AgentPlanEntry {
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
  priority?: 'high' | 'medium' | 'low';
}

/** A `/` command an ACP agent offers: sent as a message starting with `/name`. */
export interface AgentCommand {
  name: string;
  description: string;
  /** What to type after the name, when it takes input. */
  hint?: string;
}

/** A mode or model an ACP agent offers. */
export interface AgentChoice {
  id: string;
  name: string;
  description?: string;
  /** A mode in which the agent acts without asking: shown, but chosen only at the desk. */
  unasked?: true;
}

/** `GET /v1/agent/agents`: the agents a session may run. */
export interface AgentInfo {
  id: string;
  name: string;
  available: boolean;
  /** Why it is not available, and how to make it so. */
  reason?: string;
}

/** Web Push payloads of the agent: no file text and no command, only where to look. */
export type AgentPush = { type: 'agent_needs_you'; session: string; callId: string } | { type: 'agent_idle'; session: string };

/** One file in `GET /v1/agent/sessions/<id>/changes` (docs/agent.md): the session's change to it as one diff. */
export interface AgentFileChange {
  path: string;
  kind: 'created' | 'modified' | 'deleted';
  /** From before the session's first change to the file to after its last. */
  diff: string;
  /** Lowercase hex SHA-256 of `diff`: what an Undo signs. */
  digest: string;
  /** The file is no longer as the session left it: Undo is refused (409 agent.changed_outside). */
  changedOutside: boolean;
}

/** `GET /v1/agent/sessions/<id>/changes` and the answer of `POST …/changes/undo`. */
export interface AgentChanges {
  files: AgentFileChange[];
  /** Every file's diff, one after another. */
  diff: string;
}
