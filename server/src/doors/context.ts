import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger';
import type { AdapterFactories, KeySource, ProviderSource } from '../providers/types';
import type { ChatService } from '../chat/service';
import type { ReplyEvents } from './replyEvents';
import type { AdmissionState } from '../http/admission';
import type { BodyBudget, RequestLogEntry, RequestState } from '../http/request';
import type { Route as HttpRoute } from '../http/route';
import type { DeviceChange, DeviceRegistry } from '../store/devices';
import type { ClaimCodes } from '../store/claimCodes';

// The relay's composition as its doors see it. It lives here, above http/ (which knows only
// HTTP facts and passes this context along untouched) and below session/ (which builds it).

/**
 * What the relay itself needs from its host (the extension, the CLI or a test). A door's own
 * options are declared in its folder (session/relay.ts adds every door's to these).
 */
export interface RelayCoreOptions {
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
  /**
   * Keep registered devices across restarts (issue 26: deskrelay.rememberDevices, "rememberDevices"
   * in config.json), as salted hashes in `devices.json` of the config dir; read at every start.
   * Default on (issue 36): a restart never unpairs a phone; off, device tokens die with the relay
   * and the file is deleted.
   */
  rememberDevices?: boolean;
  /** The clock pairing codes expire by (tests move it instead of sleeping). */
  clock?: () => number;
  /** A device registered, was revoked, or every device was forgotten (the desk shows it). */
  onDeviceChange?: (change: DeviceChange) => void;
}

/** The core options with the relay's defaults filled in. */
export type ResolvedOptions = Required<Omit<RelayCoreOptions, 'onRequestLog' | 'configDir' | 'adapters' | 'onDeviceChange' | 'clock'>> &
  Pick<RelayCoreOptions, 'onRequestLog' | 'adapters' | 'onDeviceChange' | 'clock'> & { configDir: string };

/** What admits a request (http's AdmissionState), with the stores the doors use behind it. */
export interface Admission extends AdmissionState {
  /** The registered devices while running (issue 26); admission checks tokens through them (http's DeviceMatcher). */
  devices: DeviceRegistry | undefined;
  /** The desk's one-time pairing codes (issue 36). */
  claims: ClaimCodes;
}

/** What a door gets from the relay; `O` is the door's own options, as its host set them (each may be absent). */
export interface RelayContext<O extends object = object> {
  readonly options: ResolvedOptions & Readonly<O>;
  /** The one chat pipeline every door uses. */
  readonly chat: ChatService;
  readonly admission: Readonly<Admission>;
  /** Doors telling each other what happened in this relay run (a resumable reply ended). */
  readonly replies: ReplyEvents;
  /** Request body bytes being read, shared by every request of this relay. */
  readonly bodies: BodyBudget;
  state(req: IncomingMessage): RequestState;
  /** Writes a request's line in the funnel's request log, for a door that answers outside the HTTP response (the WebSocket, when it closes). */
  logRequest(req: IncomingMessage, path: string, status: number): void;
}

/**
 * The part of the relay's context one door reads, declared at the top of its folder: `K` the
 * members besides the options, `P` the relay's options, `O` the door's own options. The funnel
 * passes the whole context, which is one of every slice; typed against its slice, a door cannot
 * reach for what it did not declare (tsc refuses it), and a reader sees what each door needs.
 */
export type ContextSlice<K extends Exclude<keyof RelayContext, 'options'> = never, P extends keyof ResolvedOptions = never, O extends object = object> = Pick<RelayContext, K> & {
  readonly options: Pick<ResolvedOptions, P> & Readonly<O>;
};

/** One endpoint of a door: http's Route, its handler given the door's slice `C` of the relay's context. */
export type DoorRoute<C = RelayContext> = HttpRoute<C>;

/**
 * The context a device's request gets: one whose chat service is that device's view
 * (ChatService.forDevice), so its chats count against and end with the device.
 */
export const deviceContexts =
  (ctx: RelayContext) =>
  (device: string): RelayContext =>
    Object.create(ctx, { chat: { value: ctx.chat.forDevice(device) } }) as RelayContext;
