import { EventEmitter } from 'node:events';
import { silentLogger, type Logger } from '../logger';
import { TunnelError, withLastLines } from './errors';
import { cloudflaredEnv, createIsolatedConfig, freeLoopbackPort } from './isolation';
import { connectionSignal, LastLines, tunnelUrlFrom } from './output';
import { waitForHealth, type ProbeOptions } from './probe';
import { CloudflaredProcess, type Exit } from './process';

export type TunnelState = 'stopped' | 'starting' | 'up' | 'down';

export interface QuickTunnelOptions {
  /** From `findCloudflared()`. */
  binary: string;
  /** The relay's local base URL, e.g. `http://127.0.0.1:53210`. */
  localUrl: string;
  logger?: Logger;
  /** Limit for cloudflared to print its URL (default 30 s). */
  urlTimeoutMs?: number;
  /** Limit for `<url>/v1/health` to answer 200 through the tunnel (default 60 s). */
  probeTimeoutMs?: number;
  probe?: ProbeOptions;
  /** SIGTERM → SIGKILL delay on stop (default 3 s). */
  stopGraceMs?: number;
  /** Environment for cloudflared (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

export interface QuickTunnel {
  on(event: 'state', listener: (state: TunnelState) => void): this;
  on(event: 'progress', listener: (message: string) => void): this;
  on(event: 'down', listener: (message: string) => void): this;
  once(event: 'state', listener: (state: TunnelState) => void): this;
  once(event: 'progress', listener: (message: string) => void): this;
  once(event: 'down', listener: (message: string) => void): this;
}

/** Tunnels with a cloudflared or a temp config to clean up, for `stopAllTunnelsSync`. */
const active = new Set<QuickTunnel>();

/**
 * The user's cloudflared running a quick tunnel to the relay. See index.ts for the life cycle.
 */
export class QuickTunnel extends EventEmitter {
  private readonly opts: QuickTunnelOptions;
  private readonly localOrigin: string;
  private readonly logger: Logger;
  private currentState: TunnelState = 'stopped';
  private currentUrl?: string;
  private proc?: CloudflaredProcess;
  private config?: { file: string; remove(): void };
  private readonly last = new LastLines(20);
  private starting?: Promise<string>;
  private stopping?: Promise<void>;
  private abort?: AbortController;

  constructor(opts: QuickTunnelOptions) {
    super();
    let local: URL;
    try {
      local = new URL(opts.localUrl);
    } catch {
      throw new TunnelError(`The relay URL for cloudflared is not a URL: ${opts.localUrl}`);
    }
    if (local.protocol !== 'http:') throw new TunnelError(`cloudflared must forward to the relay's http:// URL, not ${opts.localUrl}`);
    this.opts = opts;
    this.localOrigin = local.origin;
    this.logger = opts.logger ?? silentLogger;
  }

  get state(): TunnelState {
    return this.currentState;
  }

  /** The public https URL while the tunnel is up (or reconnecting after a lost connection). */
  get url(): string | undefined {
    return this.currentUrl;
  }

  /** What cloudflared printed last (up to 20 lines), for diagnostics. */
  get lastLines(): string[] {
    return this.last.get();
  }

  /** cloudflared's pid while it runs. */
  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /**
   * Starts cloudflared and resolves with the public URL once `<url>/v1/health` answered 200
   * through it. Rejects with a TunnelError (cloudflared's last lines included) otherwise.
   */
  start(): Promise<string> {
    if (this.currentState === 'up' && this.currentUrl) return Promise.resolve(this.currentUrl);
    this.starting ??= this.run().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** A new cloudflared, hence a new URL: the phone must pair again. */
  async restart(): Promise<string> {
    await this.stop();
    return this.start();
  }

  /** Stops cloudflared (SIGTERM, then SIGKILL) and removes the temp config. A pending start() rejects. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // Taken now: the start settles (and forgets its promise) while cloudflared is stopping.
      const starting = this.starting?.catch(() => {});
      this.abort?.abort();
      await this.teardown();
      await starting;
      this.currentUrl = undefined;
      this.setState('stopped');
    })().finally(() => {
      this.stopping = undefined;
    });
    return this.stopping;
  }

  /** Synchronous last resort for process exit: SIGKILL cloudflared, remove the temp config. */
  killSync(): void {
    this.proc?.killSync();
    this.config?.remove();
    active.delete(this);
  }

  private async run(): Promise<string> {
    if (this.stopping) await this.stopping;
    if (this.proc) await this.teardown(); // 'down' after a lost connection: start afresh
    const abort = new AbortController();
    this.abort = abort;
    this.last.clear();
    this.currentUrl = undefined;
    this.setState('starting');
    this.progress('Starting cloudflared…');
    try {
      const metricsPort = await freeLoopbackPort();
      if (abort.signal.aborted) throw stoppedError();
      this.config = createIsolatedConfig();
      const args = [
        'tunnel',
        '--url',
        this.localOrigin,
        '--no-autoupdate',
        '--config',
        this.config.file,
        '--metrics',
        `127.0.0.1:${metricsPort}`,
        '--loglevel',
        'info',
      ];
      const proc = new CloudflaredProcess(this.opts.binary, args, {
        env: cloudflaredEnv(this.opts.env ?? process.env),
        graceMs: this.opts.stopGraceMs,
      });
      this.proc = proc;
      active.add(this);
      proc.on('line', (line: string) => this.onLine(proc, line));
      proc.on('exit', (exit: Exit) => this.onExit(proc, exit));

      const url = await this.waitForUrl(proc, abort.signal);
      this.logger.info(`cloudflared opened ${url}; waiting for it to answer`);
      this.progress(`cloudflared opened ${url}; waiting for the tunnel to answer…`);
      await this.waitForAnswer(proc, url, abort.signal);
      this.currentUrl = url;
      this.setState('up');
      this.logger.info(`tunnel up: ${url}`);
      return url;
    } catch (err) {
      if (abort.signal.aborted) throw new TunnelError('The tunnel was stopped before it was up.', this.last.get());
      await this.teardown();
      this.setState('down');
      const error = err instanceof TunnelError ? err : new TunnelError(`Starting cloudflared failed: ${(err as Error).message}`);
      this.logger.error(error.message);
      throw error;
    }
  }

  private waitForUrl(proc: CloudflaredProcess, signal: AbortSignal): Promise<string> {
    const limitMs = this.opts.urlTimeoutMs ?? 30_000;
    return new Promise((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        proc.off('line', onLine);
        proc.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const onLine = (line: string) => {
        const url = tunnelUrlFrom(line);
        if (!url) return;
        cleanup();
        resolve(url);
      };
      const onExit = (exit: Exit) => {
        cleanup();
        reject(this.exitError(exit, 'before it printed a tunnel URL.'));
      };
      const onAbort = () => {
        cleanup();
        reject(stoppedError());
      };
      const timer = setTimeout(() => {
        cleanup();
        const lines = this.last.get();
        reject(new TunnelError(withLastLines(`cloudflared printed no tunnel URL within ${Math.round(limitMs / 1000)} s.`, lines), lines));
      }, limitMs);
      proc.on('line', onLine);
      proc.on('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      if (proc.exit) onExit(proc.exit);
    });
  }

  private async waitForAnswer(proc: CloudflaredProcess, url: string, signal: AbortSignal): Promise<void> {
    const probing = new AbortController();
    const stop = () => probing.abort();
    signal.addEventListener('abort', stop, { once: true });
    const died = proc.done.then((exit) => {
      throw this.exitError(exit, `while waiting for ${url} to answer.`);
    });
    died.catch(() => {});
    try {
      await Promise.race([
        waitForHealth(url, {
          ...this.opts.probe,
          timeoutMs: this.opts.probeTimeoutMs ?? 60_000,
          signal: probing.signal,
          onProgress: (seconds) => this.progress(`Waiting for the tunnel to answer (${seconds} s)…`),
        }).catch((err: unknown) => {
          if (signal.aborted) throw stoppedError();
          const lines = this.last.get();
          throw err instanceof TunnelError ? new TunnelError(withLastLines(err.message, lines), lines) : err;
        }),
        died,
      ]);
    } finally {
      probing.abort();
      signal.removeEventListener('abort', stop);
    }
  }

  private onLine(proc: CloudflaredProcess, line: string): void {
    if (proc !== this.proc) return;
    this.last.add(line);
    if (/\s(ERR|FTL|PNC)\s/.test(line)) this.logger.warn(`cloudflared: ${line}`);
    const signal = connectionSignal(line);
    if (signal === 'lost' && this.currentState === 'up') {
      this.setState('down');
      const message = `cloudflared lost its connection to Cloudflare (${line.trim()}). It is reconnecting; ${this.currentUrl} works again if it comes back.`;
      this.logger.warn(message);
      this.emit('down', message);
    } else if (signal === 'connected' && this.currentState === 'down' && this.currentUrl && !proc.exit) {
      this.logger.info(`cloudflared reconnected; ${this.currentUrl} is up again`);
      this.setState('up');
    }
  }

  private onExit(proc: CloudflaredProcess, exit: Exit): void {
    // While starting, start() reports the exit; on stop(), teardown has already let go of proc.
    if (proc !== this.proc || this.currentState === 'starting') return;
    const url = this.currentUrl;
    this.proc = undefined;
    this.currentUrl = undefined;
    this.config?.remove();
    this.config = undefined;
    active.delete(this);
    this.setState('down');
    const message = withLastLines(
      `${describeExit(exit)}; the tunnel ${url ?? ''} is gone. Restart the tunnel: a restarted quick tunnel has a new URL, so the phone must pair again.`,
      this.last.get(),
    );
    this.logger.error(message);
    this.emit('down', message);
  }

  private async teardown(): Promise<void> {
    const proc = this.proc;
    const config = this.config;
    this.proc = undefined;
    this.config = undefined;
    try {
      if (proc) await proc.stop();
    } finally {
      config?.remove();
      active.delete(this);
    }
  }

  private exitError(exit: Exit, when: string): TunnelError {
    const lines = this.last.get();
    if (exit.spawnError) {
      return new TunnelError(`Could not start cloudflared at ${this.opts.binary}: ${exit.spawnError.message}`, lines);
    }
    return new TunnelError(withLastLines(`${describeExit(exit)} ${when}`, lines), lines);
  }

  private setState(state: TunnelState): void {
    if (state === this.currentState) return;
    this.currentState = state;
    this.emit('state', state);
  }

  private progress(message: string): void {
    this.emit('progress', message);
  }
}

function describeExit(exit: Exit): string {
  if (exit.spawnError) return `cloudflared could not be started (${exit.spawnError.message})`;
  if (exit.signal) return `cloudflared was killed (${exit.signal})`;
  return `cloudflared exited with code ${exit.code ?? 'unknown'}`;
}

function stoppedError(): TunnelError {
  return new TunnelError('The tunnel was stopped before it was up.');
}

/**
 * Kills every tunnel's cloudflared and removes their temp configs, synchronously. Register it with
 * `process.on('exit', stopAllTunnelsSync)`: the watchdog already covers a crash, this makes an
 * ordinary exit without `stop()` just as clean.
 */
export function stopAllTunnelsSync(): void {
  for (const tunnel of [...active]) tunnel.killSync();
}
