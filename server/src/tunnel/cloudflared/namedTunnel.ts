import { TunnelError } from '../errors';
import type { AgentProcess } from '../process';
import { ProcessTunnel, type ProcessTunnelOptions } from '../processTunnel';
import { isolatedFlags } from './isolation';
import { isErrorLine } from './output';

export interface NamedTunnelOptions extends ProcessTunnelOptions {
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
export class NamedTunnel extends ProcessTunnel {
  readonly kind = 'cloudflare-named' as const;
  readonly lastingUrl = true;
  private readonly token: string;
  private readonly publicUrl: string;
  private readonly connectTimeoutMs: number;
  private readonly connected = new Set<string>();

  constructor(opts: NamedTunnelOptions) {
    super('cloudflared', opts);
    this.token = opts.token.trim();
    this.publicUrl = namedTunnelUrl(opts.hostname);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 30_000;
  }

  protected async open(signal: AbortSignal): Promise<string> {
    if (!this.token) {
      throw new TunnelError('The named Cloudflare tunnel needs its tunnel token: run "DeskRelay: Set Tunnel Token" in VS Code, or set DESKRELAY_TUNNEL_TOKEN for deskrelay serve.');
    }
    const { config, flags } = await isolatedFlags(signal);
    this.tempFiles = config;
    this.track();
    this.connected.clear();
    const proc = this.spawnAgent(['tunnel', ...flags, 'run'], { TUNNEL_TOKEN: this.token }, [this.token]);

    // The hostname is known before cloudflared runs: the relay must answer it for the probe.
    const url = this.publicUrl;
    this.announce(url);
    await this.waitForAgent(proc, signal, {
      limitMs: this.connectTimeoutMs,
      // onLine (registered first) has already counted this line's connection.
      match: () => (this.connected.size > 0 ? true : undefined),
      exitWhen: 'before it connected to Cloudflare.',
      timeout: 'cloudflared did not connect to Cloudflare',
    });
    this.progress(`cloudflared connected; waiting for ${url} to answer…`);
    await this.waitForProcessAnswer(proc, url, signal, NOT_REACHED);
    return url;
  }

  protected onLine(proc: AgentProcess, line: string): void {
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

  protected exitedAfterUp(): string {
    return 'is down. Restart the tunnel: its address stays the same, so the phone keeps its pairing.';
  }
}
