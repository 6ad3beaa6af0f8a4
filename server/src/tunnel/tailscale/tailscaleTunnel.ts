import { AgentTunnel, stoppedError } from '../base';
import { runCommand, runCommandSync, type CommandResult } from '../command';
import { agentEnv } from '../env';
import { TunnelError, withLastLines } from '../errors';
import type { TunnelOptions } from '../tunnel';
import { findOurHandler, parseServeConfig, portInUse, proxyTarget, SERVE_PORTS, type ServeConfig } from './serveConfig';

export type TailscaleMode = 'funnel' | 'serve';

export interface TailscaleTunnelOptions extends TunnelOptions {
  /** From findTailscale(). */
  binary: string;
  /** `funnel`: public HTTPS on the internet; `serve`: HTTPS inside the user's tailnet only. */
  mode: TailscaleMode;
  /** Limit for `tailscale funnel|serve --bg` (it may wait for Funnel to be enabled in the admin console; default 60 s). */
  publishTimeoutMs?: number;
  /** How often tailscaled is asked whether our handler is still there (default 10 s). */
  pollMs?: number;
}

const STATUS_TIMEOUT_MS = 15_000;

/**
 * Tailscale Funnel or Serve publishing the relay: `tailscale funnel --bg --https=<port> <relay>`
 * (or `serve`) adds one handler to tailscaled's serve config and exits; tailscaled does the
 * serving, so there is no process of ours to watch. The URL comes from `… status --json` (our
 * handler's `<DNS name>:<port>`), and lasts: it is the machine's name in the tailnet.
 *
 * Only the root mount of a port nobody uses is taken (443, else 8443, else 10000: the ports Funnel
 * allows), and stop removes exactly that handler with `tailscale funnel --https=<port> off`, and
 * only while it still proxies to the relay: the user's other Serve/Funnel config is never touched.
 * While up, the status is polled: tailscaled unreachable is 'down' until it answers again (its
 * config survives a restart), our handler gone is 'down' for good.
 */
export class TailscaleTunnel extends AgentTunnel {
  readonly kind: 'tailscale-funnel' | 'tailscale-serve';
  readonly lastingUrl = true;
  readonly pid = undefined;
  private readonly binary: string;
  private readonly mode: TailscaleMode;
  private readonly publishTimeoutMs: number;
  private readonly pollMs: number;
  /** The handler we added (removed on stop). */
  private added?: { port: number; target: string };
  private poll?: NodeJS.Timeout;
  private polling = false;

  constructor(opts: TailscaleTunnelOptions) {
    super('tailscale', opts);
    this.binary = opts.binary;
    this.mode = opts.mode;
    this.kind = opts.mode === 'funnel' ? 'tailscale-funnel' : 'tailscale-serve';
    this.publishTimeoutMs = opts.publishTimeoutMs ?? 60_000;
    this.pollMs = opts.pollMs ?? 10_000;
  }

  private get env(): NodeJS.ProcessEnv {
    return agentEnv(this.opts.env ?? process.env);
  }

  protected async open(signal: AbortSignal): Promise<string> {
    const target = proxyTarget(this.localOrigin);
    const before = await this.status(signal);
    let port = SERVE_PORTS.find((p) => findOurHandler(before, p, target));
    if (port !== undefined) {
      // Already there (the user's own setup, or a run of ours that could not clean up): use it, leave it.
      this.logger.info(`tailscale already ${this.mode === 'funnel' ? 'funnels' : 'serves'} ${target} on port ${port}; using it as it is`);
    } else {
      port = SERVE_PORTS.find((p) => !portInUse(before, p));
      if (port === undefined) {
        throw new TunnelError(
          `Tailscale already serves something else on ports ${SERVE_PORTS.join(', ')}; DeskRelay leaves your Serve/Funnel config alone. Free one of them (tailscale ${this.mode} status shows what is there) and start the tunnel again.`,
        );
      }
      const args = [this.mode, '--bg', `--https=${port}`, /^http:\/\/127\.0\.0\.1:\d+$/.test(target) ? target.slice(target.lastIndexOf(':') + 1) : target];
      this.logger.info(`running tailscale ${args.join(' ')}`);
      this.progress(`Asking tailscale to ${this.mode === 'funnel' ? 'funnel' : 'serve'} port ${port} to DeskRelay…`);
      this.track();
      this.added = { port, target };
      const result = await runCommand(this.binary, args, {
        env: this.env,
        timeoutMs: this.publishTimeoutMs,
        signal,
        onLine: (line) => {
          this.last.add(line);
          // Funnel not yet enabled for the tailnet: tailscale prints where to enable it and may wait.
          if (/https:\/\/login\.tailscale\.com\//.test(line) || /enable/i.test(line)) this.progress(`tailscale: ${line.trim()}`);
        },
      });
      if (signal.aborted || result.error === 'aborted') throw stoppedError();
      if (result.error || result.code !== 0) throw this.failed(`tailscale ${this.mode} --bg failed${describe(result)}.`, result);
    }
    const after = await this.status(signal);
    const found = findOurHandler(after, port, target);
    if (!found) {
      throw new TunnelError(
        withLastLines(`tailscale ${this.mode} did not publish DeskRelay (no handler for ${target} on port ${port} in its status).`, this.last.get(), 'tailscale'),
        this.last.get(),
      );
    }
    if (this.mode === 'funnel' && !found.funnel) {
      throw new TunnelError(withLastLines(`Tailscale serves ${found.url} but Funnel is not on for it.`, this.last.get(), 'tailscale'), this.last.get());
    }
    const url = found.url;
    this.announce(url);
    this.progress(`tailscale ${this.mode === 'funnel' ? 'funnels' : 'serves'} ${url}; waiting for it to answer…`);
    const hint =
      this.mode === 'funnel'
        ? 'Tailscale publishes it but the public URL does not reach DeskRelay yet: a new Funnel name can take a minute to appear in DNS.'
        : 'Tailscale serves it but it does not reach DeskRelay: is this machine connected to the tailnet (tailscale status)?';
    await this.waitForAnswer(url, new Promise<never>(() => {}), signal, hint);
    this.watch(port, target);
    return url;
  }

  protected async close(): Promise<void> {
    this.unwatch();
    const added = this.added;
    this.added = undefined;
    if (!added) return;
    try {
      const config = await this.status();
      if (!findOurHandler(config, added.port, added.target)) return; // gone, or replaced by the user: not ours to remove
      const result = await runCommand(this.binary, [this.mode, `--https=${added.port}`, 'off'], { env: this.env, timeoutMs: STATUS_TIMEOUT_MS });
      if (result.code !== 0) this.logger.warn(`tailscale ${this.mode} --https=${added.port} off failed${describe(result)}: ${result.lines.join(' / ')}`);
      else this.logger.info(`tailscale ${this.mode} handler on port ${added.port} removed`);
    } catch (err) {
      this.logger.warn(`could not remove the tailscale ${this.mode} handler on port ${added.port}: ${(err as Error).message}`);
    }
  }

  protected closeSync(): void {
    this.unwatch();
    const added = this.added;
    this.added = undefined;
    if (added) runCommandSync(this.binary, [this.mode, `--https=${added.port}`, 'off'], this.env, 5000);
  }

  /** tailscaled's serve config; a TunnelError relaying the CLI's own message when it cannot say. */
  private async status(signal?: AbortSignal): Promise<ServeConfig> {
    const result = await runCommand(this.binary, [this.mode, 'status', '--json'], { env: this.env, timeoutMs: STATUS_TIMEOUT_MS, signal });
    if (signal?.aborted) throw stoppedError();
    for (const line of result.stderrLines) this.last.add(line);
    if (result.error || result.code !== 0) throw this.failed(`tailscale ${this.mode} status failed${describe(result)}.`, result);
    try {
      return parseServeConfig(result.stdout);
    } catch (err) {
      throw new TunnelError(`tailscale ${this.mode} status --json printed something that is not its serve config (${(err as Error).message}).`);
    }
  }

  private failed(message: string, result: CommandResult): TunnelError {
    if (result.error === 'ENOENT' || result.error === 'EACCES') {
      return new TunnelError(`Could not start tailscale at ${this.binary} (${result.error}).`, [], 'agent-missing');
    }
    const lines = result.lines.length > 0 ? result.lines : this.last.get();
    // The CLI says only "Logged out."; the way out is one command.
    if (lines.some((l) => /^\s*Logged out\.?\s*$/i.test(l))) {
      return new TunnelError('Tailscale is logged out. Run "tailscale up" to log in, then start the tunnel again.', lines);
    }
    return new TunnelError(withLastLines(message, lines, 'tailscale'), lines);
  }

  private watch(port: number, target: string): void {
    this.unwatch();
    this.poll = setInterval(() => void this.check(port, target), this.pollMs);
    this.poll.unref();
  }

  private unwatch(): void {
    if (this.poll) clearInterval(this.poll);
    this.poll = undefined;
  }

  private async check(port: number, target: string): Promise<void> {
    if (this.polling || (this.state !== 'up' && this.state !== 'down')) return;
    this.polling = true;
    try {
      let config: ServeConfig;
      try {
        config = await this.status();
      } catch (err) {
        if (this.state === 'up') this.lost(`${(err as Error).message} ${this.url} works again when tailscaled is back.`);
        return;
      }
      if (!this.poll) return;
      if (findOurHandler(config, port, target)) {
        this.back();
        return;
      }
      this.unwatch();
      this.added = undefined;
      const url = this.url;
      this.gone(`DeskRelay's tailscale ${this.mode} handler for ${url ?? `port ${port}`} is gone (removed with tailscale ${this.mode} reset or off?). Start the tunnel again: the address stays the same.`);
    } finally {
      this.polling = false;
    }
  }
}

function describe(result: CommandResult): string {
  if (result.error === 'timeout') return ' (no answer in time)';
  if (result.error) return ` (${result.error})`;
  if (result.signal) return ` (killed by ${result.signal})`;
  return result.code ? ` (exit code ${result.code})` : '';
}
