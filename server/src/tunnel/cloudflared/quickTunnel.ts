import { AgentTunnel, stoppedError } from '../base';
import { agentEnv, passedNames } from '../env';
import { TunnelError, withLastLines } from '../errors';
import { freeLoopbackPort } from '../loopback';
import { AgentProcess, type Exit } from '../process';
import type { TunnelOptions } from '../tunnel';
import { createIsolatedConfig } from './isolation';
import { connectionSignal, isErrorLine, tunnelUrlFrom } from './output';

export type { TunnelState } from '../tunnel';

export interface QuickTunnelOptions extends TunnelOptions {
  /** From `findCloudflared()`. */
  binary: string;
  /** Limit for cloudflared to print its URL (default 30 s). */
  urlTimeoutMs?: number;
}

const NOT_REACHED = 'cloudflared is running but Cloudflare does not reach DeskRelay through it.';

/**
 * The user's cloudflared running a quick tunnel (`cloudflared tunnel --url …`) to the relay: a
 * random https://….trycloudflare.com URL, new at every start. See tunnel.ts for the life cycle;
 * here: cloudflared prints the URL in a box (limit 30 s), 530s from the edge are retried until
 * the relay answers, `Connection terminated` / `Unregistered tunnel connection` mean 'down' while
 * cloudflared reconnects, and its next `Registered tunnel connection` means 'up' again.
 *
 * cloudflared runs with `--no-autoupdate`, an empty temp `--config` (a ~/.cloudflared/config.yml
 * would hijack the quick tunnel), `--metrics 127.0.0.1:<free port>` and an allow-listed
 * environment (no TUNNEL_* variable can turn it into something else), under a watchdog that
 * kills it when this process goes away.
 *
 * Why not the `cloudflared` package's Tunnel class: it spawns the package's module-global binary
 * (`use()` changes it for every caller), hands events raw chunks rather than lines, reports any
 * trycloudflare.com URL (including api.trycloudflare.com from an error line), stops with SIGINT
 * only and offers no way to tie cloudflared's life to ours. We spawn directly and keep its
 * parsing knowledge (output.ts); the package still supplies install() and its install location.
 */
export class QuickTunnel extends AgentTunnel {
  readonly kind = 'cloudflare-quick' as const;
  readonly lastingUrl = false;
  private readonly binary: string;
  private readonly urlTimeoutMs: number;
  private proc?: AgentProcess;
  private config?: { file: string; remove(): void };

  constructor(opts: QuickTunnelOptions) {
    super('cloudflared', opts);
    this.binary = opts.binary;
    this.urlTimeoutMs = opts.urlTimeoutMs ?? 30_000;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  protected async open(signal: AbortSignal): Promise<string> {
    const metricsPort = await freeLoopbackPort();
    if (signal.aborted) throw stoppedError();
    this.config = createIsolatedConfig();
    this.track();
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
    const source = this.opts.env ?? process.env;
    const passed = passedNames(source);
    if (passed.length > 0) this.logger.info(`cloudflared also gets ${passed.join(', ')} (DESKRELAY_TUNNEL_PASS_ENV)`);
    const proc = new AgentProcess(this.binary, args, { env: agentEnv(source), graceMs: this.opts.stopGraceMs });
    this.proc = proc;
    proc.on('line', (line: string) => this.onLine(proc, line));
    proc.on('exit', (exit: Exit) => this.onExit(proc, exit));

    const url = await this.waitForUrl(proc, signal);
    this.logger.info(`cloudflared opened ${url}; waiting for it to answer`);
    this.announce(url);
    this.progress(`cloudflared opened ${url}; waiting for the tunnel to answer…`);
    const died = proc.done.then((exit): never => {
      throw this.exitError(exit, `while waiting for ${url} to answer.`);
    });
    await this.waitForAnswer(url, died, signal, NOT_REACHED);
    return url;
  }

  protected async close(): Promise<void> {
    const proc = this.proc;
    const config = this.config;
    this.proc = undefined;
    this.config = undefined;
    try {
      if (proc) await proc.stop();
    } finally {
      config?.remove();
    }
  }

  protected closeSync(): void {
    this.proc?.killSync();
    this.config?.remove();
  }

  private waitForUrl(proc: AgentProcess, signal: AbortSignal): Promise<string> {
    const limitMs = this.urlTimeoutMs;
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

  private onLine(proc: AgentProcess, line: string): void {
    if (proc !== this.proc) return;
    this.last.add(line);
    if (isErrorLine(line)) this.logger.warn(`cloudflared: ${line}`);
    const signal = connectionSignal(line);
    if (signal === 'lost' && this.state === 'up') {
      this.lost(`cloudflared lost its connection to Cloudflare (${line.trim()}). It is reconnecting; ${this.url} works again if it comes back.`);
    } else if (signal === 'connected' && !proc.exit) {
      this.back();
    }
  }

  private onExit(proc: AgentProcess, exit: Exit): void {
    // While starting, start() reports the exit; on stop(), close() has already let go of proc.
    if (proc !== this.proc || this.state === 'starting') return;
    const url = this.url;
    this.proc = undefined;
    this.config?.remove();
    this.config = undefined;
    this.gone(
      withLastLines(
        `${describeExit(exit)}; the tunnel ${url ?? ''} is gone. Restart the tunnel: a restarted quick tunnel has a new URL, so the phone must pair again.`,
        this.last.get(),
      ),
    );
  }

  private exitError(exit: Exit, when: string): TunnelError {
    const lines = this.last.get();
    if (exit.spawnError) {
      return new TunnelError(`Could not start cloudflared at ${this.binary}: ${exit.spawnError.message}`, lines);
    }
    return new TunnelError(withLastLines(`${describeExit(exit)} ${when}`, lines), lines);
  }
}

function describeExit(exit: Exit): string {
  if (exit.spawnError) return `cloudflared could not be started (${exit.spawnError.message})`;
  if (exit.signal) return `cloudflared was killed (${exit.signal})`;
  return `cloudflared exited with code ${exit.code ?? 'unknown'}`;
}
