// A tunnel agent is someone else's program holding a public door to the relay. It gets only the
// variables it needs to run and reach the internet, never the user's whole environment: cloudflared
// alone reads 40+ TUNNEL_* variables as flags (TUNNEL_BASTION turns a quick tunnel into a jump
// host, TUNNEL_EDGE + TUNNEL_CACERT send it to another edge), ngrok and Tailscale have their own,
// and provider keys (OPENAI_API_KEY, …) are nobody's business but the relay's. An allow-list also
// covers variables nobody has thought of yet, which a deny-list cannot.

/** Everywhere: where programs are, whose home (the agent's own config and credentials live there). */
const BASE = ['PATH', 'HOME'];
/** The network the user has: proxies (both spellings, Go and curl read either) and extra CAs. */
const NETWORK = [
  'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'ALL_PROXY',
  'http_proxy', 'https_proxy', 'no_proxy', 'all_proxy',
  'SSL_CERT_FILE', 'SSL_CERT_DIR',
];
/**
 * Windows has no HOME; these are its homes and temp folders, plus what any Windows program needs
 * to start at all (SystemRoot, windir, SystemDrive: Go's runtime and Winsock look there) and
 * what starting a .cmd/.bat wrapper through the shell needs (ComSpec, PATHEXT).
 */
const WINDOWS = ['USERPROFILE', 'APPDATA', 'LOCALAPPDATA', 'SystemRoot', 'windir', 'SystemDrive', 'TEMP', 'TMP', 'ComSpec', 'PATHEXT'];

/**
 * Names the user adds on purpose (comma or space separated), for a variable their setup needs and
 * this list lacks (a corporate proxy's own variable, say). Only exact names: no wildcards, so a
 * family like TUNNEL_* never comes back in by accident.
 */
export const PASS_ENV_VARIABLE = 'DESKRELAY_TUNNEL_PASS_ENV';

export interface AgentEnvOptions {
  platform?: NodeJS.Platform;
  /** Variables the agent is given on purpose by its implementation (a tunnel token, say): set as is. */
  set?: Record<string, string>;
}

/** The allow-listed environment for a tunnel agent, taken from `source` (usually process.env). */
export function agentEnv(source: NodeJS.ProcessEnv, opts: AgentEnvOptions = {}): NodeJS.ProcessEnv {
  const platform = opts.platform ?? process.platform;
  const names = [...BASE, ...NETWORK, ...(platform === 'win32' ? WINDOWS : []), ...passedNames(source, platform)];
  // Windows variable names are case-insensitive (Path, PATH); everywhere else http_proxy and
  // HTTP_PROXY are two variables and both are kept.
  const key = platform === 'win32' ? (n: string) => n.toUpperCase() : (n: string) => n;
  const allowed = new Set(names.map(key));
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && allowed.has(key(name))) out[name] = value;
  }
  return { ...out, ...opts.set };
}

/** The names in DESKRELAY_TUNNEL_PASS_ENV, for the log (names only, never values). */
export function passedNames(source: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string[] {
  const entry = Object.entries(source).find(([n]) => (platform === 'win32' ? n.toUpperCase() === PASS_ENV_VARIABLE : n === PASS_ENV_VARIABLE));
  return (entry?.[1] ?? '').split(/[\s,]+/).filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
}
