import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger';
import type { AdapterFactories, KeySource, ProviderSource } from '../providers/types';
import type { ChatService } from '../chat/service';
import type { ReplyEvents } from '../doors/replyEvents';
import type { BodyBudget } from './body';
import type { DeviceChange, DeviceRegistry } from '../store/devices';
import type { AgentHost } from '../agent/host';
import type { ConversationBounds } from '../store/conversations';

export interface RequestLogEntry {
  method: string;
  /** The path only: a query string could carry anything, so it is never logged. */
  path: string;
  status: number;
  durationMs: number;
  provider?: string;
  /** The device that made the request (issue 26); absent for the pairing token. Never a token. */
  device?: string;
}

/** What the relay needs from its host (the extension, the CLI or a test). */
export interface RelayOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  version: string;
  providers: ProviderSource;
  keys: KeySource;
  /** Adapters for kinds only the host can serve (the extension's `vscode-lm`); createAdapter asks these first. */
  adapters?: AdapterFactories;
  workspaces: () => number;
  maxConcurrentStreams: () => number;
  /** Where the token file goes; default `$DESKRELAY_CONFIG_DIR` or the platform config dir. */
  configDir?: string;
  logger?: Logger;
  onRequestLog?: (entry: RequestLogEntry) => void;
  /** SPEC: 15 s. Tests shorten it. */
  keepAliveMs?: number;
  /** CONTRACT: a provider silent for 5 minutes is a failure. Tests shorten it. */
  providerIdleMs?: number;
  /** How long a request body may take to arrive (30 s); each body has its own deadline. */
  bodyTimeoutMs?: number;
  /** Bytes all request bodies being read at once may hold together (64 MiB); past it a request gets 503 `server.busy`. */
  bodyBudgetBytes?: number;
  /** How long a whole request (headers and body) may take to arrive before Node cuts the connection; default 60 s or more. */
  requestTimeoutMs?: number;
  /** Open connections at most; past it new ones are closed at once (512). */
  maxConnections?: number;
  /** One reply at most this long (UTF-16 code units, 16 MiB); past it the stream ends with an error naming the provider. */
  maxReplyChars?: number;
  /** Resumable streams: how long a generation outlives its last client, and a finished one stays replayable (120 s). */
  resumeTtlMs?: number;
  /** Resumable streams: how long a generation that ended in an error stays replayable (30 s, never longer than resumeTtlMs). */
  resumeErrorTtlMs?: number;
  /** Resumable streams: framed event bytes kept per generation for replay (1 MiB); older events are dropped. */
  resumeBufferBytes?: number;
  /**
   * Web Push when a resumable reply ends with no client connected (issue 15); read on every use,
   * so a settings change applies at once. Default on.
   */
  pushNotifications?: () => boolean;
  /**
   * Push services the relay may send to besides the browsers' own (FCM, Mozilla, Apple,
   * Windows): hostnames, `host:port`, or `*.suffix`. For tests with a stand-in push service;
   * default: `$DESKRELAY_PUSH_HOSTS`, comma-separated, else none.
   */
  pushHosts?: readonly string[];
  /** How long one push may take, all of it, before it is given up (10 s). Tests shorten it. */
  pushTimeoutMs?: number;
  /**
   * Keep registered devices across restarts (issue 26: deskrelay.rememberDevices, "rememberDevices"
   * in config.json), as salted hashes in `devices.json` of the config dir; read at every start.
   * Default off: device tokens die with the relay, as the pairing token does.
   */
  rememberDevices?: boolean;
  /** A device registered, was revoked, or every device was forgotten (the desk shows it). */
  onDeviceChange?: (change: DeviceChange) => void;
  /** The workspace agent (issue 23): its folders, asked on every request. Absent or no folders: every /v1/agent path answers 403 agent.disabled. */
  agent?: AgentHost;
  /**
   * Keep conversations on the desktop (issue 30: deskrelay.keepConversations, "keepConversations"
   * in config.json); read on every request, so a settings change applies at once. Default off:
   * every /v1/conversations path answers 403 conversations.disabled and nothing is written.
   */
  keepConversations?: () => boolean;
  /** Where conversations are kept; default `<configDir>/conversations` (the extension passes its global storage). */
  conversationsDir?: string;
  /** The store's bounds (count, bytes, photo bytes); defaults in store/conversations.ts. */
  conversationBounds?: Partial<ConversationBounds>;
  /** How the 403 tells the user to turn conversations on, in this host's words. */
  conversationsHowToEnable?: string;
}

type ConversationOptionNames = 'keepConversations' | 'conversationsDir' | 'conversationBounds' | 'conversationsHowToEnable';
/** Options each door reads and defaults itself (a new door's options need no line here or in the relay). */
type DoorOptions = 'resumeTtlMs' | 'resumeErrorTtlMs' | 'resumeBufferBytes' | 'pushNotifications' | 'pushHosts' | 'pushTimeoutMs';

export type ResolvedOptions = Required<Omit<RelayOptions, 'onRequestLog' | 'configDir' | 'adapters' | 'onDeviceChange' | 'agent' | ConversationOptionNames | DoorOptions>> &
  Pick<RelayOptions, 'onRequestLog' | 'adapters' | 'onDeviceChange' | 'agent' | ConversationOptionNames | DoorOptions> & { configDir: string };

/** Per-request facts the request log and the error handler need. */
export interface RequestState {
  id: string;
  startedAt: number;
  provider?: string;
  /** The device whose token admitted the request; undefined for the pairing token. */
  device?: string;
  /** The SSE stream answering it, once open: a failure after the headers ends it with its terminal event. */
  stream?: { error(message: string): void };
}

export interface RelayContext {
  readonly options: ResolvedOptions;
  /** The one chat pipeline every door uses. */
  readonly chat: ChatService;
  /** The token in force; undefined while stopped. */
  readonly token: string | undefined;
  /** The registered devices while running (issue 26). */
  readonly devices: DeviceRegistry | undefined;
  readonly stopping: boolean;
  /** Doors telling each other what happened in this relay run (a resumable reply ended). */
  readonly replies: ReplyEvents;
  /** Request body bytes being read, shared by every request of this relay. */
  readonly bodies: BodyBudget;
  state(req: IncomingMessage): RequestState;
  /** Writes a request's line in the funnel's request log, for a door that answers outside the HTTP response (the WebSocket, when it closes). */
  logRequest(req: IncomingMessage, path: string, status: number): void;
}

export type { Route } from './route';
