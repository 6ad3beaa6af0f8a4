import { EventEmitter } from 'node:events';
import { silentLogger, type Logger } from '../logger';
import { TunnelError, withLastLines } from './errors';
import { LastLines } from './lines';
import { probeOnce, waitForHealth } from './probe';
import type { Tunnel, TunnelEvents, TunnelHealth, TunnelKind, TunnelOptions, TunnelState } from './tunnel';

/** Tunnels holding a process or temp files, for `stopAllTunnelsSync`. */
const active = new Set<AgentTunnel>();

export interface AgentTunnel {
  on<E extends keyof TunnelEvents>(event: E, listener: TunnelEvents[E]): this;
  once<E extends keyof TunnelEvents>(event: E, listener: TunnelEvents[E]): this;
  off<E extends keyof TunnelEvents>(event: E, listener: TunnelEvents[E]): this;
}

/**
 * The life cycle every agent shares (tunnel.ts): one start at a time, stop() winning over a
 * start in progress, state and events, the health probe, the exit-time registry. An
 * implementation supplies open() (run the agent until its public URL answers), close() and
 * closeSync(), and reports outages with lost()/gone()/back().
 */
export abstract class AgentTunnel extends EventEmitter implements Tunnel {
  abstract readonly kind: TunnelKind;
  abstract readonly lastingUrl: boolean;
  abstract readonly pid: number | undefined;
  protected readonly opts: TunnelOptions;
  protected readonly logger: Logger;
  /** The relay's loopback origin, checked to be an http:// URL. */
  protected readonly localOrigin: string;
  protected readonly last = new LastLines(20);
  private currentState: TunnelState = 'stopped';
  private currentUrl?: string;
  private starting?: Promise<string>;
  private stopping?: Promise<void>;
  private abort?: AbortController;

  protected constructor(
    readonly agent: string,
    opts: TunnelOptions,
  ) {
    super();
    let local: URL;
    try {
      local = new URL(opts.localUrl);
    } catch {
      throw new TunnelError(`The relay URL for ${agent} is not a URL: ${opts.localUrl}`);
    }
    if (local.protocol !== 'http:') throw new TunnelError(`${agent} must forward to the relay's http:// URL, not ${opts.localUrl}`);
    this.opts = opts;
    this.localOrigin = local.origin;
    this.logger = opts.logger ?? silentLogger;
  }

  get state(): TunnelState {
    return this.currentState;
  }

  get url(): string | undefined {
    return this.currentUrl;
  }

  get lastLines(): string[] {
    return this.last.get();
  }

  start(): Promise<string> {
    if (this.currentState === 'up' && this.currentUrl) return Promise.resolve(this.currentUrl);
    this.starting ??= this.run().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  async restart(): Promise<string> {
    await this.stop();
    return this.start();
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // Taken now: the start settles (and forgets its promise) while the agent is stopping.
      const starting = this.starting?.catch(() => {});
      this.abort?.abort();
      await this.release();
      await starting;
      this.currentUrl = undefined;
      this.setState('stopped');
    })().finally(() => {
      this.stopping = undefined;
    });
    return this.stopping;
  }

  killSync(): void {
    this.closeSync();
    active.delete(this);
  }

  async health(): Promise<TunnelHealth> {
    const url = this.currentUrl;
    if (!url) return { ok: false, answer: 'not up' };
    const result = await probeOnce(url, this.opts.healthPath, this.opts.probe);
    return { ok: result === 200, answer: typeof result === 'number' ? `HTTP ${result}` : result };
  }

  /** Runs the agent until its public URL answers; resolves with that URL. `signal` aborts on stop(). */
  protected abstract open(signal: AbortSignal): Promise<string>;
  /** Stops the agent and removes what open() made; nothing to do is fine. */
  protected abstract close(): Promise<void>;
  protected abstract closeSync(): void;

  /** Call once the agent holds a process or files, so process exit cleans them up. */
  protected track(): void {
    active.add(this);
  }

  /** Polls `<url><healthPath>` until 200; rejects at once if `died` rejects (the agent exited). */
  protected async waitForAnswer(url: string, died: Promise<never>, signal: AbortSignal, hint: string): Promise<void> {
    const probing = new AbortController();
    const stop = () => probing.abort();
    signal.addEventListener('abort', stop, { once: true });
    died.catch(() => {});
    try {
      await Promise.race([
        waitForHealth(url, {
          ...this.opts.probe,
          path: this.opts.healthPath,
          hint,
          timeoutMs: this.opts.probeTimeoutMs ?? 60_000,
          signal: probing.signal,
          onProgress: (seconds) => this.progress(`Waiting for the tunnel to answer (${seconds} s)…`),
        }).catch((err: unknown) => {
          if (signal.aborted) throw stoppedError();
          const lines = this.last.get();
          throw err instanceof TunnelError ? new TunnelError(withLastLines(err.message, lines, this.agent), lines) : err;
        }),
        died,
      ]);
    } finally {
      probing.abort();
      signal.removeEventListener('abort', stop);
    }
  }

  /** The agent lost its connection but reconnects by itself: 'down' now, back() when it is. */
  protected lost(message: string): void {
    if (this.currentState !== 'up') return;
    this.setState('down');
    this.logger.warn(message);
    this.emit('down', message);
  }

  protected back(): void {
    if (this.currentState !== 'down' || !this.currentUrl) return;
    this.logger.info(`${this.agent} reconnected; ${this.currentUrl} is up again`);
    this.setState('up');
  }

  /** The agent is gone after 'up' (call after releasing its process): 'down' for good. */
  protected gone(message: string): void {
    this.currentUrl = undefined;
    active.delete(this);
    this.setState('down');
    this.logger.error(message);
    this.emit('down', message);
  }

  /** The agent reported its public URL (not yet probed). */
  protected announce(url: string): void {
    this.emit('url', url);
  }

  protected progress(message: string): void {
    this.emit('progress', message);
  }

  private async run(): Promise<string> {
    if (this.stopping) await this.stopping;
    await this.release(); // 'down' after a lost connection: start afresh
    const abort = new AbortController();
    this.abort = abort;
    this.last.clear();
    this.currentUrl = undefined;
    this.setState('starting');
    this.progress(`Starting ${this.agent}…`);
    try {
      const url = await this.open(abort.signal);
      if (abort.signal.aborted) throw stoppedError();
      this.currentUrl = url;
      this.setState('up');
      this.logger.info(`tunnel up: ${url}`);
      return url;
    } catch (err) {
      if (abort.signal.aborted) throw new TunnelError('The tunnel was stopped before it was up.', this.last.get());
      await this.release();
      this.setState('down');
      const error = err instanceof TunnelError ? err : new TunnelError(`Starting ${this.agent} failed: ${(err as Error).message}`);
      this.logger.error(error.message);
      throw error;
    }
  }

  private async release(): Promise<void> {
    try {
      await this.close();
    } finally {
      active.delete(this);
    }
  }

  private setState(state: TunnelState): void {
    if (state === this.currentState) return;
    this.currentState = state;
    this.emit('state', state);
  }
}

export function stoppedError(): TunnelError {
  return new TunnelError('The tunnel was stopped before it was up.');
}

/**
 * Kills every tunnel's agent and removes their temp files, synchronously. Register it with
 * `process.on('exit', stopAllTunnelsSync)`: the watchdog already covers a crash, this makes an
 * ordinary exit without `stop()` just as clean.
 */
export function stopAllTunnelsSync(): void {
  for (const tunnel of [...active]) tunnel.killSync();
}
