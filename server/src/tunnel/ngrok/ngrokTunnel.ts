import type { AgentProcess } from '../process';
import { ProcessTunnel, type ProcessTunnelOptions } from '../processTunnel';
import { describeRecord, isErrorRecord, parseRecord, sessionSignal, startedUrl } from './output';

export interface NgrokTunnelOptions extends ProcessTunnelOptions {
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
 * `started tunnel` record of our own agent's log, never from its web API: that sits on
 * 127.0.0.1:4040 only while the port is free (another agent there moves ours to 4041, 4042…), so
 * 4040 may well answer with someone else's tunnels. The authtoken comes from ngrok's own config file (found through HOME,
 * or XDG_CONFIG_HOME when set) or, given on purpose, NGROK_AUTHTOKEN; nothing else of the user's
 * environment (env.ts). A free account's dev domain, or the domain set here, stays the same across
 * restarts.
 */
export class NgrokTunnel extends ProcessTunnel {
  readonly kind = 'ngrok' as const;
  readonly lastingUrl = true;
  private readonly secrets: string[];
  private readonly authtoken?: string;
  private readonly domain?: string;
  private readonly urlTimeoutMs: number;

  constructor(opts: NgrokTunnelOptions) {
    super('ngrok', opts);
    this.authtoken = opts.authtoken?.trim() || undefined;
    this.domain = opts.domain?.trim().replace(/^https?:\/\//, '').replace(/\/$/, '') || undefined;
    this.secrets = this.authtoken ? [this.authtoken] : [];
    this.urlTimeoutMs = opts.urlTimeoutMs ?? 30_000;
  }

  protected async open(signal: AbortSignal): Promise<string> {
    this.track();
    // --inspect=false: ngrok's inspector would keep every request whole (the bearer token, the
    // chat) and hand it to any local process at its web API (/api/requests/http).
    const args = ['http', this.localOrigin, '--log', 'stdout', '--log-format', 'json', '--inspect=false', ...(this.domain ? ['--url', `https://${this.domain}`] : [])];
    const source = this.opts.env ?? process.env;
    const set: Record<string, string> = {};
    if (this.authtoken) set.NGROK_AUTHTOKEN = this.authtoken;
    // ngrok's config lives in the XDG config folder on Linux: where the user moved it, it must look too.
    if (source.XDG_CONFIG_HOME) set.XDG_CONFIG_HOME = source.XDG_CONFIG_HOME;
    const proc = this.spawnAgent(args, set, this.secrets);

    const url = await this.waitForAgent(proc, signal, {
      limitMs: this.urlTimeoutMs,
      match: (line) => {
        const record = parseRecord(line);
        return record && startedUrl(record);
      },
      exitWhen: 'before it reported a tunnel URL.',
      timeout: 'ngrok reported no tunnel URL',
    });
    return this.opened(proc, url, signal, NOT_REACHED);
  }

  protected onLine(proc: AgentProcess, line: string): void {
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

  protected exitedAfterUp(): string {
    return 'is down. Restart the tunnel: its address stays the same.';
  }
}
