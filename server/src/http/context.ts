import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger';
import type { AdapterFactories, KeySource, ProviderSource } from '../providers/types';
import type { ChatService } from '../chat/service';
import type { ReplyEvents } from '../doors/replyEvents';
import type { AgentHost } from '../agent/host';

export interface RequestLogEntry {
  method: string;
  /** The path only: a query string could carry anything, so it is never logged. */
  path: string;
  status: number;
  durationMs: number;
  provider?: string;
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
  /** How long a request body may take to arrive. */
  bodyTimeoutMs?: number;
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
  /** The workspace agent (issue 23): its folders, asked on every request. Absent or no folders: every /v1/agent path answers 403 agent.disabled. */
  agent?: AgentHost;
}

export type ResolvedOptions = Required<Omit<RelayOptions, 'onRequestLog' | 'configDir' | 'adapters' | 'agent'>> &
  Pick<RelayOptions, 'onRequestLog' | 'adapters' | 'agent'> & { configDir: string };

/** Per-request facts the request log and the error handler need. */
export interface RequestState {
  id: string;
  startedAt: number;
  provider?: string;
}

export interface RelayContext {
  readonly options: ResolvedOptions;
  /** The one chat pipeline every door uses. */
  readonly chat: ChatService;
  /** The token in force; undefined while stopped. */
  readonly token: string | undefined;
  readonly stopping: boolean;
  /** Doors telling each other what happened in this relay run (a resumable reply ended). */
  readonly replies: ReplyEvents;
  state(req: IncomingMessage): RequestState;
}

export type { Route } from './route';
