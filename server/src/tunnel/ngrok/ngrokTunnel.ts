import { AgentTunnel, stoppedError } from '../base';
import { agentEnv, passedNames } from '../env';
import { TunnelError, withLastLines } from '../errors';
import { redact } from '../find';
import { AgentProcess, type Exit } from '../process';
import type { TunnelOptions } from '../tunnel';
import { describeRecord, isErrorRecord, parseRecord, sessionSignal, startedUrl } from './output';

export interface NgrokTunnelOptions extends TunnelOptions {
  binary: string;
  /** Handed over in NGROK_AUTHTOKEN when set; otherwise ngrok uses its own config (`ngrok config add-authtoken`). */
  authtoken?: string;
  /** A domain of the user's (their free static domain or a custom one): `--url https://<domain>`. */
  domain?: string;
  /** Limit for ngrok to report its URL (default 30 s). */
  urlTimeoutMs?: number;
}

const NOT_REACHED = 'ngrok is running but its URL does not reach DeskRelay through it.';

/**
 * The user's ngrok agent: `ngrok http <relay> --log stdout --log-format json`, the URL from the
 * `started tunnel` record. The authtoken comes from ngrok's own config file (found through HOME,
 * or XDG_CONFIG_HOME when set) or, given on purpose, NGROK_AUTHTOKEN; nothing else of the user's
 * environment (env.ts). A free account's dev domain, or the domain set here, stays the same across
 * restarts.
 */
export class NgrokTunnel extends AgentTunnel {
  readonly kind = 'ngrok' as const;
  readonly lastingUrl = true;
  private readonly binary: string;
  private readonly secrets: string[];
  private readonly authtoken?: string;
  private readonly domain?: string;
  private readonly urlTimeoutMs: number;
  private proc?: AgentProcess;

  constructor(opts: NgrokTunnelOptions) {
    super('ngrok', opts);
    this.binary = opts.binary;
    this.authtoken = opts.authtoken?.trim() || undefined;
    this.domain = opts.domain?.trim().replace(/^https?:\/\//, '').replace(/\/$/, '') || undefined;
    this.secrets = this.authtoken ? [this.authtoken] : [];
    this.urlTimeoutMs = opts.urlTimeoutMs ?? 30_000;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  protected async open(signal: AbortSignal): Promise<string> {
    this.track();
    const args = ['http', this.localOrigin, '--log', 'stdout', '--log-format', 'json', ...(this.domain ? ['--url', `https://${this.domain}`] : [])];
    const source = this.opts.env ?? process.env;
    const passed = passedNames(source);
    if (passed.length > 0) this.logger.info(`ngrok also gets ${passed.join(', ')} (DESKRELAY_TUNNEL_PASS_ENV)`);
    const set: Record<string, string> = {};
    if (this.authtoken) set.NGROK_AUTHTOKEN = this.authtoken;
    // ngrok's config lives in the XDG config folder on Linux: where the user moved it, it must look too.
    if (source.XDG_CONFIG_HOME) set.XDG_CONFIG_HOME = source.XDG_CONFIG_HOME;
    const proc = new AgentProcess(this.binary, args, { env: agentEnv(source, { set }), graceMs: this.opts.stopGraceMs });
    this.proc = proc;
    proc.on('line', (line: string) => this.onLine(proc, redact(line, this.secrets)));
    proc.on('exit', (exit: Exit) => this.onExit(proc, exit));

    const url = await this.waitForUrl(proc, signal);
    this.logger.info(`ngrok opened ${url}; waiting for it to answer`);
    this.announce(url);
    this.progress(`ngrok opened ${url}; waiting for the tunnel to answer…`);
    const died = proc.done.then((exit): never => {
      throw this.exitError(exit, `while waiting for ${url} to answer.`);
    });
    await this.waitForAnswer(url, died, signal, NOT_REACHED);
    return url;
  }

  protected async close(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (proc) await proc.stop();
  }

  protected closeSync(): void {
    this.proc?.killSync();
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
        const record = parseRecord(line);
        const url = record && startedUrl(record);
        if (!url) return;
        cleanup();
        resolve(url);
      };
      const onExit = (exit: Exit) => {
        cleanup();
        reject(this.exitError(exit, 'before it reported a tunnel URL.'));
      };
      const onAbort = () => {
        cleanup();
        reject(stoppedError());
      };
      const timer = setTimeout(() => {
        cleanup();
        const lines = this.last.get();
        reject(new TunnelError(withLastLines(`ngrok reported no tunnel URL within ${Math.round(limitMs / 1000)} s.`, lines, 'ngrok'), lines));
      }, limitMs);
      proc.on('line', onLine);
      proc.on('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      if (proc.exit) onExit(proc.exit);
    });
  }

  private onLine(proc: AgentProcess, line: string): void {
    if (proc !== this.proc) return;
    const record = parseRecord(line);
    // Messages keep what ngrok said, not its JSON framing.
    this.last.add(record ? describeRecord(record) : line);
    if (!record) {
      if (/^ERROR:/.test(line)) this.logger.warn(`ngrok: ${line}`);
      return;
    }
    if (isErrorRecord(record)) this.logger.warn(`ngrok: ${describeRecord(record)}`);
    const signal = sessionSignal(record);
    if (signal === 'lost' && this.state === 'up') {
      this.lost(`ngrok lost its session (${describeRecord(record)}). It is reconnecting; ${this.url} works again when it is back.`);
    } else if (signal === 'connected' && !proc.exit) {
      this.back();
    }
  }

  private onExit(proc: AgentProcess, exit: Exit): void {
    if (proc !== this.proc || this.state === 'starting') return;
    const url = this.url;
    this.proc = undefined;
    this.gone(withLastLines(`${describeExit(exit)}; the tunnel ${url ?? ''} is down. Restart the tunnel: its address stays the same.`, this.last.get(), 'ngrok'));
  }

  private exitError(exit: Exit, when: string): TunnelError {
    const lines = this.last.get();
    if (exit.spawnError) return new TunnelError(`Could not start ngrok at ${this.binary}: ${exit.spawnError.message}`, lines);
    return new TunnelError(withLastLines(`${describeExit(exit)} ${when}`, lines, 'ngrok'), lines);
  }
}

function describeExit(exit: Exit): string {
  if (exit.spawnError) return `ngrok could not be started (${exit.spawnError.message})`;
  if (exit.signal) return `ngrok was killed (${exit.signal})`;
  return `ngrok exited with code ${exit.code ?? 'unknown'}`;
}
