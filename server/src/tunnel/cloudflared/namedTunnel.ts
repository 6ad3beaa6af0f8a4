import { AgentTunnel, stoppedError } from '../base';
import { agentEnv, passedNames } from '../env';
import { TunnelError, withLastLines } from '../errors';
import { redact } from '../find';
import { freeLoopbackPort } from '../loopback';
import { AgentProcess, type Exit } from '../process';
import type { TunnelOptions } from '../tunnel';
import { createIsolatedConfig } from './isolation';
import { isErrorLine } from './output';

export interface NamedTunnelOptions extends TunnelOptions {
  /** From `findCloudflared()`. */
  binary: string;
  /** The tunnel token from the Cloudflare dashboard: handed over in TUNNEL_TOKEN, never on the command line. */
  token: string;
  /** The public hostname the tunnel routes to the relay (`relay.example.com`), set up in the dashboard. */
  hostname: string;
  /** Limit for cloudflared to register its first connection (default 30 s). */
  connectTimeoutMs?: number;
}

const NOT_REACHED =
  'cloudflared is connected but Cloudflare does not reach DeskRelay through it: in the Cloudflare dashboard, the public hostname must route to http://localhost:<the relay port>.';

// `Registered tunnel connection connIndex=1 …` (observer.go logConnected) and its opposites; a named
// tunnel holds four connections and is down only when none is left.
const CONN_INDEX = /connIndex=(\d+)/;
const REGISTERED = /Registered tunnel connection/;
const UNREGISTERED = /Unregistered tunnel connection|Connection terminated|Serve tunnel error/;

/** `relay.example.com`, `https://relay.example.com/` → `https://relay.example.com`; throws on anything else. */
export function namedTunnelUrl(hostname: string): string {
  const raw = hostname.trim();
  let url: URL;
  try {
    url = new URL(/^[a-z]+:\/\//i.test(raw) ? raw : `https://${raw}`);
  } catch {
    throw new TunnelError(`The named tunnel's hostname "${raw}" is not a hostname.`);
  }
  if (url.protocol !== 'https:' || !url.hostname.includes('.') || (url.pathname !== '/' && url.pathname !== '') || url.search || url.username) {
    throw new TunnelError(`The named tunnel's hostname must be a plain hostname such as relay.example.com, not "${raw}".`);
  }
  return url.origin;
}

/**
 * The user's named Cloudflare tunnel (`cloudflared tunnel run`, remotely managed: its token comes
 * from the Zero Trust dashboard, where the user routes a public hostname to the relay's port). The
 * URL is `https://<hostname>` and lasts across restarts. cloudflared gets the same isolation as the
 * quick tunnel (empty `--config`, `--no-autoupdate`, allow-listed environment) plus the token in
 * TUNNEL_TOKEN, the variable cloudflared reads for `--token`, so `ps` never shows it.
 */
export class NamedTunnel extends AgentTunnel {
  readonly kind = 'cloudflare-named' as const;
  readonly lastingUrl = true;
  private readonly binary: string;
  private readonly token: string;
  private readonly publicUrl: string;
  private readonly connectTimeoutMs: number;
  private proc?: AgentProcess;
  private config?: { file: string; remove(): void };
  private readonly connected = new Set<string>();

  constructor(opts: NamedTunnelOptions) {
    super('cloudflared', opts);
    this.binary = opts.binary;
    this.token = opts.token.trim();
    this.publicUrl = namedTunnelUrl(opts.hostname);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 30_000;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  protected async open(signal: AbortSignal): Promise<string> {
    if (!this.token) {
      throw new TunnelError('The named Cloudflare tunnel needs its tunnel token: run "DeskRelay: Set Tunnel Token" in VS Code, or set DESKRELAY_TUNNEL_TOKEN for deskrelay serve.');
    }
    const metricsPort = await freeLoopbackPort();
    if (signal.aborted) throw stoppedError();
    this.config = createIsolatedConfig();
    this.track();
    const args = ['tunnel', '--no-autoupdate', '--config', this.config.file, '--metrics', `127.0.0.1:${metricsPort}`, '--loglevel', 'info', 'run'];
    const source = this.opts.env ?? process.env;
    const passed = passedNames(source);
    if (passed.length > 0) this.logger.info(`cloudflared also gets ${passed.join(', ')} (DESKRELAY_TUNNEL_PASS_ENV)`);
    this.connected.clear();
    const proc = new AgentProcess(this.binary, args, { env: agentEnv(source, { set: { TUNNEL_TOKEN: this.token } }), graceMs: this.opts.stopGraceMs });
    this.proc = proc;
    proc.on('line', (line: string) => this.onLine(proc, redact(line, [this.token])));
    proc.on('exit', (exit: Exit) => this.onExit(proc, exit));

    // The hostname is known before cloudflared runs: the relay must answer it for the probe.
    const url = this.publicUrl;
    this.announce(url);
    await this.waitForConnection(proc, signal);
    this.progress(`cloudflared connected; waiting for ${url} to answer…`);
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

  private waitForConnection(proc: AgentProcess, signal: AbortSignal): Promise<void> {
    const limitMs = this.connectTimeoutMs;
    return new Promise((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        proc.off('line', onLine);
        proc.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const onLine = () => {
        if (this.connected.size === 0) return;
        cleanup();
        resolve();
      };
      const onExit = (exit: Exit) => {
        cleanup();
        reject(this.exitError(exit, 'before it connected to Cloudflare.'));
      };
      const onAbort = () => {
        cleanup();
        reject(stoppedError());
      };
      const timer = setTimeout(() => {
        cleanup();
        const lines = this.last.get();
        reject(new TunnelError(withLastLines(`cloudflared did not connect to Cloudflare within ${Math.round(limitMs / 1000)} s.`, lines), lines));
      }, limitMs);
      proc.on('line', onLine);
      proc.on('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      if (proc.exit) onExit(proc.exit);
      else onLine();
    });
  }

  private onLine(proc: AgentProcess, line: string): void {
    if (proc !== this.proc) return;
    this.last.add(line);
    if (isErrorLine(line)) this.logger.warn(`cloudflared: ${line}`);
    const index = CONN_INDEX.exec(line)?.[1] ?? '0';
    if (UNREGISTERED.test(line)) {
      this.connected.delete(index);
      if (this.connected.size === 0 && this.state === 'up') {
        this.lost(`cloudflared lost its connections to Cloudflare (${line.trim()}). It is reconnecting; ${this.url} works again when it is back.`);
      }
    } else if (REGISTERED.test(line)) {
      this.connected.add(index);
      if (!proc.exit) this.back();
    }
  }

  private onExit(proc: AgentProcess, exit: Exit): void {
    if (proc !== this.proc || this.state === 'starting') return;
    const url = this.url;
    this.proc = undefined;
    this.config?.remove();
    this.config = undefined;
    this.gone(
      withLastLines(
        `${describeExit(exit)}; the tunnel ${url ?? ''} is down. Restart the tunnel: its address stays the same, so the phone keeps its pairing.`,
        this.last.get(),
      ),
    );
  }

  private exitError(exit: Exit, when: string): TunnelError {
    const lines = this.last.get();
    if (exit.spawnError) return new TunnelError(`Could not start cloudflared at ${this.binary}: ${exit.spawnError.message}`, lines);
    return new TunnelError(withLastLines(`${describeExit(exit)} ${when}`, lines), lines);
  }
}

function describeExit(exit: Exit): string {
  if (exit.spawnError) return `cloudflared could not be started (${exit.spawnError.message})`;
  if (exit.signal) return `cloudflared was killed (${exit.signal})`;
  return `cloudflared exited with code ${exit.code ?? 'unknown'}`;
}
