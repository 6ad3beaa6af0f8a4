// What `tailscale serve status --json` / `tailscale funnel status --json` print: tailscaled's
// ipn.ServeConfig (tailscale/tailscale ipn/serve.go) marshalled as is, e.g. after
// `tailscale funnel --bg --https=443 53210`:
//   { "TCP": { "443": { "HTTPS": true } },
//     "Web": { "desk.tail1234.ts.net:443": { "Handlers": { "/": { "Proxy": "http://127.0.0.1:53210" } } } },
//     "AllowFunnel": { "desk.tail1234.ts.net:443": true } }
// Web is keyed by "<DNS name>:<port>" (no implicit 443); a handler is Proxy, Path or Text.

export interface ServeHandler {
  Proxy?: string;
  Path?: string;
  Text?: string;
}

export interface ServeConfig {
  TCP?: Record<string, { HTTPS?: boolean; HTTP?: boolean; TCPForward?: string; TerminateTLS?: string } | null>;
  Web?: Record<string, { Handlers?: Record<string, ServeHandler | null> } | null>;
  Services?: Record<string, unknown>;
  AllowFunnel?: Record<string, boolean>;
}

/** Parses the status JSON (`{}` or `null` when nothing is served). Throws on anything that is not an object. */
export function parseServeConfig(text: string): ServeConfig {
  const value: unknown = JSON.parse(text.trim() || 'null');
  if (value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new Error('not a JSON object');
  return value as ServeConfig;
}

/** Ports Funnel allows (tailscale.com/kb/1223/funnel); Serve uses the same, so one list fits both. */
export const SERVE_PORTS = [443, 8443, 10000] as const;

/** What `tailscale serve <port>` proxies to (ipn.ExpandProxyTargetValue): `http://127.0.0.1:<port>`. */
export function proxyTarget(localOrigin: string): string {
  return localOrigin.replace(/\/$/, '');
}

export interface Found {
  /** "<DNS name>:<port>" */
  hostPort: string;
  port: number;
  url: string;
  funnel: boolean;
}

/** Our handler: the root mount on `port` proxying to `target`, if there is one. */
export function findOurHandler(config: ServeConfig, port: number, target: string): Found | undefined {
  for (const [hostPort, web] of Object.entries(config.Web ?? {})) {
    const m = /^(.*):(\d+)$/.exec(hostPort);
    if (!m || Number(m[2]) !== port) continue;
    const handler = web?.Handlers?.['/'];
    if (!handler?.Proxy || normalize(handler.Proxy) !== normalize(target)) continue;
    const host = m[1]!;
    return { hostPort, port, url: port === 443 ? `https://${host}` : `https://${host}:${port}`, funnel: config.AllowFunnel?.[hostPort] === true };
  }
  return undefined;
}

/** True when anything of the user's is served on `port` (a web handler at any mount, or a TCP forward). */
export function portInUse(config: ServeConfig, port: number): boolean {
  const tcp = config.TCP?.[String(port)];
  if (tcp && (tcp.TCPForward || tcp.TerminateTLS)) return true;
  for (const [hostPort, web] of Object.entries(config.Web ?? {})) {
    if (hostPort.endsWith(`:${port}`) && Object.keys(web?.Handlers ?? {}).length > 0) return true;
  }
  return false;
}

function normalize(proxy: string): string {
  // tailscaled stores the target as expanded; a bare port means 127.0.0.1.
  const p = /^\d+$/.test(proxy) ? `http://127.0.0.1:${proxy}` : proxy;
  return p.replace(/\/$/, '').replace('://localhost:', '://127.0.0.1:');
}
