/**
 * The tunnel contract: a public HTTPS URL for the relay, opened by an agent the user already has
 * (cloudflared today; a named Cloudflare tunnel, Tailscale Funnel/Serve and ngrok fit the same
 * shape). DeskRelay never runs a relay of its own: the agent is the user's program, started and
 * watched by us with an allow-listed environment (env.ts), tied to our life (watchdog.ts).
 *
 *   const agent = cloudflareQuickTunnel({ explicitPath });   // a TunnelAgent
 *   const program = agent.locate();                         // throws TunnelError 'agent-missing' (path named, install steps)
 *   const tunnel = agent.create(program, { localUrl: 'http://127.0.0.1:53210', healthPath: '/v1/health', logger });
 *   tunnel.on('url', (url) => …);        // known, not yet probed: allow its hostname in the relay now
 *   tunnel.on('progress', (msg) => …);   // "Waiting for the tunnel to answer (12 s)…"
 *   tunnel.on('state', (s) => …);        // 'stopped' | 'starting' | 'up' | 'down'
 *   tunnel.on('down', (msg) => …);       // after 'up': the agent died or lost its connection
 *   const url = await tunnel.start();    // public https URL, answering <url><healthPath> with 200
 *   await tunnel.health();               // one probe now: { ok, answer }
 *   await tunnel.stop();
 *   process.on('exit', stopAllTunnelsSync);
 *
 * Life cycle, the same for every agent: start() → 'starting' → the agent reports its public URL
 * ('url') → GET <url><healthPath> until 200 → 'up'. A start that fails rejects with a TunnelError that
 * carries the agent's last lines and leaves the state 'down'; stop() during start makes start()
 * reject. After 'up': the agent exiting emits 'down' and the tunnel is gone (start() again for a
 * new one); a lost connection emits 'down' while the agent reconnects by itself, and the state
 * returns to 'up', same URL, when it is back. Whether a new start keeps the URL is `lastingUrl`:
 * a quick tunnel's does not (the phone must pair again), a named tunnel's or Funnel's does (the
 * phone only needs the new token after a relay restart).
 *
 * The tunnel always forwards to the relay on loopback (loopback.ts `forwardUrl`), and it knows
 * the relay only through `healthPath`: nothing in tunnel/ knows DeskRelay's routes.
 */
import type { Logger } from '../logger';
import type { ProbeOptions } from './probe';

export type TunnelState = 'stopped' | 'starting' | 'up' | 'down';

/**
 * Which agent and mode (the `deskrelay.tunnel.kind` setting and `--tunnel <kind>`): cloudflared's
 * quick tunnel (a new URL at every start) or one of the agents whose address lasts: a named
 * Cloudflare tunnel on the user's hostname, Tailscale Funnel (public) or Serve (tailnet only), ngrok.
 */
export type TunnelKind = 'cloudflare-quick' | 'cloudflare-named' | 'tailscale-funnel' | 'tailscale-serve' | 'ngrok';

/** Every kind, the default first. */
export const TUNNEL_KINDS: readonly TunnelKind[] = ['cloudflare-quick', 'cloudflare-named', 'tailscale-funnel', 'tailscale-serve', 'ngrok'];

export function isTunnelKind(value: unknown): value is TunnelKind {
  return typeof value === 'string' && (TUNNEL_KINDS as readonly string[]).includes(value);
}

export interface TunnelOptions {
  /** The relay's loopback base URL: `http://127.0.0.1:<port>` or `http://[::1]:<port>` (see forwardUrl). */
  localUrl: string;
  /** Path that must answer 200 through the public URL before the tunnel is up (the relay's health endpoint). */
  healthPath: string;
  logger?: Logger;
  /**
   * Where the agent's environment is taken from (default `process.env`). Only the allow-list in
   * env.ts reaches the agent, whatever this holds.
   */
  env?: NodeJS.ProcessEnv;
  /** How the health probe reaches the public URL; production leaves it unset (tests reach a stand-in edge). */
  probe?: ProbeOptions;
  /** Limit for the public URL to answer 200 (default 60 s). */
  probeTimeoutMs?: number;
  /** SIGTERM → SIGKILL delay on stop (default 3 s). */
  stopGraceMs?: number;
}

/** One probe of `<url><healthPath>` right now. `answer`: `HTTP 200`, `HTTP 530`, `ENOTFOUND`, `not up`… */
export interface TunnelHealth {
  ok: boolean;
  answer: string;
}

export interface TunnelEvents {
  state: (state: TunnelState) => void;
  /**
   * The agent has a public URL, before the probe: a relay that checks Host headers (DNS
   * rebinding) must allow this hostname now, or the probe through it is refused. Emitted at
   * every start (an agent with a lasting URL may know it before it runs).
   */
  url: (url: string) => void;
  progress: (message: string) => void;
  down: (message: string) => void;
}

export interface Tunnel {
  readonly kind: TunnelKind;
  /** The agent's program name, as messages say it: `cloudflared`, `tailscale`, `ngrok`. */
  readonly agent: string;
  /** True when a new start of this tunnel keeps its public URL. */
  readonly lastingUrl: boolean;
  readonly state: TunnelState;
  /** The public https URL while up (or reconnecting after a lost connection). */
  readonly url: string | undefined;
  /** What the agent printed last, for diagnostics. */
  readonly lastLines: string[];
  /** The agent's pid while a process of ours runs it (an agent that publishes and exits has none). */
  readonly pid: number | undefined;
  /** Resolves with the public URL once `<url><healthPath>` answered 200 through it. Rejects with a TunnelError. */
  start(): Promise<string>;
  /** stop() then start(): a new URL unless `lastingUrl`. */
  restart(): Promise<string>;
  /** Stops the agent and undoes what it set up; a pending start() rejects. A stop is not a 'down'. */
  stop(): Promise<void>;
  health(): Promise<TunnelHealth>;
  /** Synchronous last resort for process exit: kill the agent, remove temp files. */
  killSync(): void;
  on<E extends keyof TunnelEvents>(event: E, listener: TunnelEvents[E]): this;
  once<E extends keyof TunnelEvents>(event: E, listener: TunnelEvents[E]): this;
  off<E extends keyof TunnelEvents>(event: E, listener: TunnelEvents[E]): this;
  removeAllListeners(): this;
}

/** One kind of tunnel with its settings (a binary path; later a token, a hostname): makes Tunnels. */
export interface TunnelAgent {
  readonly kind: TunnelKind;
  /** The program, as messages name it: `cloudflared`. */
  readonly program: string;
  /** For "Starting <title> (<path>)…": `the cloudflared quick tunnel`. */
  readonly title: string;
  /** Finds the agent's program. Throws a TunnelError ('agent-missing') naming what was looked at, with install steps. */
  locate(): string;
  /** A tunnel run by `program` (from locate()). Nothing starts before start(). */
  create(program: string, opts: TunnelOptions): Tunnel;
}

/**
 * What the hosts (the extension's commands, the CLI) need to know about a tunnel kind, from its
 * agent's folder, so no host checks kinds itself.
 */
export interface TunnelKindInfo {
  /** The program the host finds, installs or asks the path of. */
  program: 'cloudflared' | 'tailscale' | 'ngrok';
  /** The editor setting naming the program's path. */
  pathSetting: string;
  /** The secret the kind takes, if any: its name in messages, whether the tunnel cannot start without it, and the environment variables the CLI reads it from (first set wins). */
  secret?: { name: string; required: boolean; env: readonly string[] };
  /** True when the tunnel cannot start without a public hostname (`hostname` setting). */
  needsHostname: boolean;
  /** How to install the program, for a host that cannot install it itself. */
  installHint: string;
  /** Installs the program into `dir` for the user and returns its path, where DeskRelay can (cloudflared); absent otherwise. */
  install?: (dir: string) => Promise<string>;
}
