import type { AgentProcess } from '../process';
import { ProcessTunnel, type ProcessTunnelOptions } from '../processTunnel';
import { isolatedFlags } from './isolation';
import { connectionSignal, isErrorLine, tunnelUrlFrom } from './output';

export type { TunnelState } from '../tunnel';

export interface QuickTunnelOptions extends ProcessTunnelOptions {
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
export class QuickTunnel extends ProcessTunnel {
  readonly kind = 'cloudflare-quick' as const;
  readonly lastingUrl = false;
  private readonly urlTimeoutMs: number;

  constructor(opts: QuickTunnelOptions) {
    super('cloudflared', opts);
    this.urlTimeoutMs = opts.urlTimeoutMs ?? 30_000;
  }

  protected async open(signal: AbortSignal): Promise<string> {
    const { config, flags } = await isolatedFlags(signal);
    this.tempFiles = config;
    this.track();
    const proc = this.spawnAgent(['tunnel', '--url', this.localOrigin, ...flags]);

    const url = await this.waitForAgent(proc, signal, {
      limitMs: this.urlTimeoutMs,
      match: tunnelUrlFrom,
      exitWhen: 'before it printed a tunnel URL.',
      timeout: 'cloudflared printed no tunnel URL',
    });
    return this.opened(proc, url, signal, NOT_REACHED);
  }

  protected onLine(proc: AgentProcess, line: string): void {
    this.last.add(line);
    if (isErrorLine(line)) this.logger.warn(`cloudflared: ${line}`);
    const signal = connectionSignal(line);
    if (signal === 'lost' && this.state === 'up') {
      this.lost(`cloudflared lost its connection to Cloudflare (${line.trim()}). It is reconnecting; ${this.url} works again if it comes back.`);
    } else if (signal === 'connected' && !proc.exit) {
      this.back();
    }
  }

  protected exitedAfterUp(): string {
    return 'is gone. Restart the tunnel: a restarted quick tunnel has a new URL, so the phone must pair again.';
  }
}
