import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { createApp, requestState } from '../http/app';
import { answerClientError } from '../http/clientError';
import type { RelayContext, RelayOptions, ResolvedOptions, Route } from '../http/context';
import { STOPPING_MESSAGE } from '../chat/events';
import { silentLogger } from '../logger';
import { configDir, tokenPath } from './paths';
import { DEFAULT_RESUME_BUFFER_BYTES } from '../doors/resumable/eventLog';
import { DEFAULT_RESUME_TTL_MS, ResumableRegistry } from '../doors/resumable/registry';
import { ChatService } from '../chat/service';
import { StreamRegistry } from '../chat/slots';
import { chatSocketUpgrade } from '../doors/ws/chatSocket';
import type { Door } from '../doors/door';
import { DOORS } from '../doors';
import { newToken, removeTokenFile, writeTokenFile } from './token';

export type { RelayOptions, RequestLogEntry } from '../http/context';

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

function resolve(options: RelayOptions): ResolvedOptions {
  return {
    keepAliveMs: 15_000,
    providerIdleMs: 5 * 60_000,
    bodyTimeoutMs: 30_000,
    resumeTtlMs: DEFAULT_RESUME_TTL_MS,
    resumeBufferBytes: DEFAULT_RESUME_BUFFER_BYTES,
    logger: silentLogger,
    ...options,
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
  readonly options: ResolvedOptions;
  private server: Server | undefined;
  private readonly streams = new StreamRegistry();
  private readonly resumable: ResumableRegistry;
  private readonly chat: ChatService;
  private readonly sockets = new Set<Socket>();
  private current: { token: string; url: string; port: number } | undefined;
  private stopping = false;
  /** Valid from the moment we listen until stop() has finished. */
  private activeToken: string | undefined;
  private readonly extraRoutes: readonly Route[];
  private doors: Door[] = [];

  constructor(options: RelayOptions, extraRoutes: readonly Route[] = []) {
    this.options = resolve(options);
    this.resumable = new ResumableRegistry(this.options.resumeTtlMs, this.options.resumeBufferBytes);
    this.extraRoutes = extraRoutes;
    const { providers, keys, providerIdleMs, maxConcurrentStreams, logger } = this.options;
    this.chat = new ChatService({ providers, keys, providerIdleMs, maxConcurrentStreams, logger, slots: this.streams });
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
  /** The underlying server while running, for upgrade handlers (WebSocket). */
  get httpServer(): Server | undefined {
    return this.server;
  }

  async start(): Promise<{ url: string; port: number; token: string }> {
    if (this.current) return this.current;
    const token = newToken();
    const self = this;
    const ctx: RelayContext = {
      options: this.options,
      chat: this.chat,
      streams: this.streams,
      resumable: this.resumable,
      get token() {
        return self.activeToken;
      },
      get stopping() {
        return self.stopping;
      },
      state: requestState,
    };
    // Node would answer a missing Host with a bare 400; the app answers it with the CONTRACT body instead.
    this.doors = DOORS.map((open) => open(ctx));
    const routes = [...this.doors.flatMap((door) => door.routes), ...this.extraRoutes];
    const server = createServer({ requireHostHeader: false }, createApp(ctx, routes));
    // A client that sends headers slowly cannot hold a connection open for long.
    server.headersTimeout = 20_000;
    server.on('upgrade', chatSocketUpgrade(server, ctx));
    server.on('clientError', answerClientError);
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    const { host, port } = this.options;
    this.activeToken = token;
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
      this.activeToken = undefined;
      throw err;
    });
    this.server = server;
    const bound = (server.address() as AddressInfo).port;
    try {
      await writeTokenFile(this.tokenFile, token);
    } catch (err) {
      await new Promise((r) => server.close(r));
      this.server = undefined;
      this.activeToken = undefined;
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      throw new RelayStartError(`Could not write the token file in the DeskRelay config folder (${code}).`, code);
    }
    this.current = { token, url: baseUrl(host, bound), port: bound };
    this.options.logger.info(`relay listening on ${this.current.url}`);
    return this.current;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server || this.stopping) return;
    this.stopping = true;
    try {
      // Detached resumable generations hold stream slots too, so this ends them as well.
      await this.chat.cancelAll(STOPPING_MESSAGE, 2_000);
      this.resumable.clear();
      for (const door of this.doors) door.stop?.();
      const closed = new Promise((r) => server.close(r));
      server.closeIdleConnections();
      // Anything still open after a short grace (a half-sent body, a stuck client) is cut.
      const timer = setTimeout(() => {
        for (const socket of this.sockets) socket.destroy();
      }, 500);
      await closed;
      clearTimeout(timer);
      await removeTokenFile(this.tokenFile);
      this.options.logger.info('relay stopped');
    } finally {
      this.server = undefined;
      this.current = undefined;
      this.activeToken = undefined;
      this.stopping = false;
    }
  }
}
