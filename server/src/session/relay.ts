import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { createFunnel, requestState } from '../http/funnel';
import { HostPolicy } from '../http/admission';
import { BodyBudget, DEFAULT_BODY_BUDGET_BYTES, RequestLog } from '../http/request';
import { DeviceHolds } from '../http/deviceHolds';
import { answerClientError } from '../http/clientError';
import { deviceContexts, type Admission, type RelayContext, type RelayCoreOptions, type ResolvedOptions, type DoorRoute } from '../doors/context';
import { STOPPING_MESSAGE } from '../chat/events';
import { silentLogger } from '../logger';
import { configDir, deskTokenPath, tokenPath } from './paths';
import { ChatService, MAX_REPLY_CHARS } from '../chat/service';
import type { Door } from '../doors/door';
import { DOORS, type DoorOptions } from '../doors';
import { refusalOf } from '../doors/errors';
import { ReplyEvents } from '../doors/replyEvents';
import { newToken, removeTokenFile, writeTokenFile } from './token';
import { DeviceRegistry, devicesPath, forgetRememberedDevices, type DeviceChange } from '../store/devices';
import { ClaimCodes, type IssuedCode } from '../store/claimCodes';
import { DEVICE_REMOVED_MESSAGE, type DeviceInfo } from '../protocol';

/** What a phone's streams under its old token end with when it paired again (a new token for the same key). */
export const DEVICE_REPAIRED_MESSAGE = 'This phone paired again; this connection used its old token.';
import { deviceInfo } from '../doors/devices';

export type { RequestLogEntry } from '../http/request';

/** What the relay needs from its host: its core options and each door's own (declared in the door's folder). */
export type RelayOptions = RelayCoreOptions & DoorOptions;

export const DEFAULT_PORT = 53210;
export const DEFAULT_HOST = '127.0.0.1';

/** Start-up failures with a one-line message fit for a user (the CLI prints it as is). */
export class RelayStartError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

function resolve(options: RelayOptions): ResolvedOptions & DoorOptions {
  return {
    keepAliveMs: 15_000,
    providerIdleMs: 5 * 60_000,
    bodyTimeoutMs: 30_000,
    bodyBudgetBytes: DEFAULT_BODY_BUDGET_BYTES,
    maxConnections: 512,
    maxReplyChars: MAX_REPLY_CHARS,
    logger: silentLogger,
    ...options,
    rememberDevices: options.rememberDevices ?? true,
    // Past the body's own timeout, so a slow body gets that answer first; Node's check is the backstop.
    requestTimeoutMs: options.requestTimeoutMs ?? Math.max(60_000, (options.bodyTimeoutMs ?? 30_000) + 10_000),
    configDir: options.configDir ?? configDir(),
  };
}

/** A URL for the bound address; for a wildcard bind, the first LAN address (what a phone on the LAN would use). */
function baseUrl(host: string, port: number): string {
  let shown = host;
  if (host === '0.0.0.0' || host === '::') {
    const lan = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal);
    shown = lan?.address ?? DEFAULT_HOST;
  }
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}

/**
 * The relay's life: start() makes a fresh token, listens and writes the token file; stop()
 * ends live streams with a terminal error event, closes, and removes the token file. A
 * restart is a new token: the old one stops working at once.
 */
export class RelayServer {
  readonly options: ResolvedOptions & DoorOptions;
  private server: Server | undefined;
  private readonly chat: ChatService;
  private readonly sockets = new Set<Socket>();
  private current: { token: string; url: string; port: number } | undefined;
  /** The token is valid from the moment we listen until stop() has finished. */
  private readonly admission: Admission;
  private readonly extraRoutes: readonly DoorRoute[];
  private doors: Door<RelayContext<DoorOptions>>[] = [];
  private readonly hosts: HostPolicy;
  private requestLog: RequestLog | undefined;
  /** What each device holds open on every door: a removed device's streams and sockets end at once. */
  private readonly holds = new DeviceHolds();

  constructor(options: RelayOptions, extraRoutes: readonly DoorRoute[] = []) {
    this.options = resolve(options);
    this.admission = { token: undefined, devices: undefined, deskToken: undefined, claims: new ClaimCodes(this.options.clock), stopping: false };
    this.extraRoutes = extraRoutes;
    this.hosts = new HostPolicy(this.options.host);
    const { providers, keys, providerIdleMs, maxConcurrentStreams, maxReplyChars, logger, adapters } = this.options;
    this.chat = new ChatService({ providers, keys, providerIdleMs, maxConcurrentStreams, maxReplyChars, logger, adapters });
  }

  get running(): boolean {
    return this.current !== undefined;
  }
  get url(): string | undefined {
    return this.current?.url;
  }
  get port(): number | undefined {
    return this.current?.port;
  }
  get token(): string | undefined {
    return this.current?.token;
  }
  get activeStreams(): number {
    return this.chat.active;
  }
  get tokenFile(): string {
    return tokenPath(this.options.configDir);
  }
  /**
   * The public hostnames clients reach the relay by (a tunnel's), each a hostname or a URL;
   * replaces the previous list, and stays in force across restarts. Requests naming any other
   * Host than these or a loopback/bound address are refused (DNS rebinding).
   */
  setPublicHosts(hosts: readonly string[]): void {
    this.hosts.setPublicHosts(hosts);
  }

  get publicHosts(): readonly string[] {
    return this.hosts.announced;
  }

  get deskTokenFile(): string {
    return deskTokenPath(this.options.configDir);
  }

  get devicesFile(): string {
    return devicesPath(this.options.configDir);
  }

  /** The registered devices with whether each is connected; empty while stopped. */
  devices(): DeviceInfo[] {
    const now = Date.now();
    return (this.admission.devices?.list() ?? []).map((d) => deviceInfo(d, { chat: this.chat }, undefined, now));
  }

  /** Removes a device: its token stops working, its streams and socket end, its push subscriptions go. False when unknown. */
  async revokeDevice(id: string): Promise<boolean> {
    return (await this.admission.devices?.revoke(id)) !== undefined;
  }

  /** The desk allows (or denies) a device the agent; remembered with the device. False when unknown or stopped. */
  async allowAgent(id: string, allowed: boolean): Promise<boolean> {
    return (await this.admission.devices?.setAgent(id, allowed)) !== undefined;
  }

  /** A new one-time pairing code (the previous one stops); undefined while stopped. */
  pairingCode(): IssuedCode | undefined {
    return this.running ? this.admission.claims.issue() : undefined;
  }

  /** Removes every device (remembered ones too); returns how many there were. */
  async forgetDevices(): Promise<number> {
    if (this.admission.devices) return this.admission.devices.forgetAll();
    await forgetRememberedDevices(this.devicesFile);
    return 0;
  }

  /** The underlying server while running, for upgrade handlers (WebSocket). */
  get httpServer(): Server | undefined {
    return this.server;
  }

  async start(): Promise<{ url: string; port: number; token: string }> {
    if (this.current) return this.current;
    const token = newToken();
    const deskToken = newToken();
    // Before the doors are made: the push door listens to it for removed devices.
    this.admission.devices = await this.openDevices();
    const self = this;
    const ctx: RelayContext<DoorOptions> = {
      options: this.options,
      chat: this.chat,
      admission: this.admission,
      replies: new ReplyEvents(this.options.logger),
      bodies: new BodyBudget(this.options.bodyBudgetBytes),
      state: requestState,
      logRequest(req, path, status) {
        const s = requestState(req);
        self.requestLog?.line({ method: req.method ?? '', path, status, durationMs: Date.now() - s.startedAt, provider: s.provider, device: s.device }, s.authenticated);
      },
    };
    this.doors = DOORS.map((open) => open(ctx));
    const routes = [...this.doors.flatMap((door) => door.routes), ...this.extraRoutes];
    const { requestTimeoutMs, maxConnections } = this.options;
    const server = createServer({
      // Node would answer a missing Host with a bare 400; the funnel answers it with the CONTRACT body instead.
      requireHostHeader: false,
      // A client that sends headers or a body slowly cannot hold a connection open for long.
      headersTimeout: Math.min(20_000, requestTimeoutMs),
      requestTimeout: requestTimeoutMs,
      // Node checks those timeouts on this period (30 s by default), so they would fire late.
      connectionsCheckingInterval: Math.min(1_000, requestTimeoutMs),
    });
    // Each connection costs memory and a file descriptor; past the cap new ones are closed at once.
    server.maxConnections = maxConnections;
    this.requestLog = new RequestLog(this.options.onRequestLog, this.options.logger);
    const gate = { admission: this.admission, logger: this.options.logger, context: ctx, contextFor: deviceContexts(ctx), refusal: refusalOf };
    const funnel = createFunnel(gate, routes, { server, hosts: this.hosts, log: this.requestLog, holds: this.holds });
    server.on('request', funnel.request);
    // With this listener Node no longer answers `Expect: 100-continue` by itself: only an admitted request is invited to send its body.
    server.on('checkContinue', funnel.checkContinue);
    server.on('upgrade', funnel.upgrade);
    server.on('clientError', answerClientError);
    server.on('connection', (socket: Socket) => {
      // A declined upgrade hands its socket back as a new 'connection': one listener per socket,
      // or a flood of refused upgrades on one connection would pile them up (O(n²) to remove).
      if (this.sockets.has(socket)) return;
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    const { host, port } = this.options;
    this.admission.token = token;
    this.admission.deskToken = deskToken;
    await new Promise<void>((resolvePromise, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE') reject(new RelayStartError(`Port ${port} on ${host} is already in use; choose another port.`, err.code));
        else if (err.code === 'EACCES') reject(new RelayStartError(`Not allowed to listen on ${host}:${port}.`, err.code));
        else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
          reject(new RelayStartError(`${host} is not an address of this machine.`, err.code));
        else reject(new RelayStartError(`Could not listen on ${host}:${port} (${err.code ?? err.message}).`, err.code ?? 'ELISTEN'));
      });
      server.listen(port, host, () => resolvePromise());
    }).catch((err) => {
      this.admission.token = undefined;
      this.admission.deskToken = undefined;
      this.admission.devices = undefined;
      throw err;
    });
    this.server = server;
    // After listen the server can still fail (EMFILE on accept): unheard, that would end the process.
    server.on('error', (err: NodeJS.ErrnoException) => this.options.logger.error(`relay server error: ${err.code ?? err.message}`));
    const bound = (server.address() as AddressInfo).port;
    try {
      await writeTokenFile(this.tokenFile, token);
      await writeTokenFile(this.deskTokenFile, deskToken);
    } catch (err) {
      await new Promise((r) => server.close(r));
      this.server = undefined;
      this.admission.token = undefined;
      this.admission.deskToken = undefined;
      this.admission.devices = undefined;
      await removeTokenFile(this.tokenFile);
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      throw new RelayStartError(`Could not write the token file in the DeskRelay config folder (${code}).`, code);
    }
    this.current = { token, url: baseUrl(host, bound), port: bound };
    this.options.logger.info(`relay listening on ${this.current.url}`);
    return this.current;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server || this.admission.stopping) return;
    this.admission.stopping = true;
    try {
      await Promise.all(this.doors.map((door) => door.beforeStop?.()));
      // Detached resumable generations hold stream slots too, so this ends them as well.
      await this.chat.cancelAll(STOPPING_MESSAGE, 2_000);
      await Promise.all(this.doors.map((door) => door.stop?.()));
      const closed = new Promise((r) => server.close(r));
      server.closeIdleConnections();
      // Anything still open after a short grace (a half-sent body, a stuck client) is cut.
      const timer = setTimeout(() => {
        for (const socket of this.sockets) socket.destroy();
      }, 500);
      await closed;
      clearTimeout(timer);
      await removeTokenFile(this.tokenFile);
      await removeTokenFile(this.deskTokenFile);
      // Last-seen times, for the next run's list.
      await this.admission.devices?.flush().catch((err: unknown) => this.options.logger.warn(`devices: could not save the devices file (${(err as NodeJS.ErrnoException).code ?? 'error'})`));
      this.options.logger.info('relay stopped');
    } finally {
      this.requestLog?.close();
      this.requestLog = undefined;
      this.server = undefined;
      this.current = undefined;
      this.admission.token = undefined;
      this.admission.deskToken = undefined;
      this.admission.devices = undefined;
      this.admission.stopping = false;
    }
  }

  /**
   * Ends everything a removed device holds: its chats first, through the chat service (each
   * door ends its own wire format; a resumable reply's numbered terminal event goes out), then,
   * once they wrote their end or after a short grace, every other stream, request and socket it
   * holds (agent and conversation events, a resumable reply it follows, a WebSocket).
   */
  private endDevice(id: string, message: string): void {
    const { logger } = this.options;
    // Taken now: a phone that paired again keeps its id, and its new token's requests are not the old one's.
    const held = this.holds.take(id);
    void this.chat.endDevice(id, message, 200).then((chats) => {
      const ended = chats + held.end(message);
      logger.info(`device ${id} ${message === DEVICE_REMOVED_MESSAGE ? 'removed' : 'paired again'}${ended ? `; ${ended} stream${ended === 1 ? '' : 's'} and socket${ended === 1 ? '' : 's'} ended` : ''}`);
    });
  }

  /**
   * This run's devices: the remembered ones when the user keeps devices, else none (and a file
   * left from when they did is deleted: off means nothing is kept). A removed device's chats end
   * at once, wherever they stream.
   */
  private async openDevices(): Promise<DeviceRegistry> {
    const { logger, rememberDevices } = this.options;
    let registry: DeviceRegistry;
    try {
      if (rememberDevices) registry = await DeviceRegistry.remembered(this.devicesFile, logger);
      else {
        await forgetRememberedDevices(this.devicesFile);
        registry = DeviceRegistry.ephemeral(logger);
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      throw new RelayStartError(`Could not read the devices file in the DeskRelay config folder (${code}).`, code);
    }
    registry.onChange((change: DeviceChange) => {
      if (change.type === 'revoked') this.endDevice(change.device.id, DEVICE_REMOVED_MESSAGE);
      else if (change.type === 'replaced') this.endDevice(change.device.id, DEVICE_REPAIRED_MESSAGE); else if (change.type === 'registered') {
        logger.info(`device ${change.device.id} registered`);
      }
      this.options.onDeviceChange?.(change);
    });
    return registry;
  }
}
