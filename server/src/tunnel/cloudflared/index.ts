/**
 * cloudflared as TunnelAgents: the quick tunnel (a new trycloudflare.com URL at every start) and
 * the user's named tunnel (their own hostname, a token from the Cloudflare dashboard). Both run
 * the user's own cloudflared (find.ts) with the same isolation (isolation.ts, env.ts).
 */
import { TunnelError } from '../errors';
import type { TunnelAgent, TunnelKindInfo, TunnelOptions } from '../tunnel';
import { findCloudflared, INSTALL_HELP, installCloudflared, type FindOptions } from './find';
import { NamedTunnel } from './namedTunnel';
import { QuickTunnel } from './quickTunnel';

export { findCloudflared, installCloudflared, INSTALL_HELP, type FindOptions } from './find';
export { QuickTunnel, type QuickTunnelOptions } from './quickTunnel';
export { NamedTunnel, namedTunnelUrl, type NamedTunnelOptions } from './namedTunnel';

export interface QuickTunnelAgentOptions extends Pick<FindOptions, 'explicitPath' | 'packageBinDir'> {
  /** Limit for cloudflared to print its URL (default 30 s). */
  urlTimeoutMs?: number;
}

export function cloudflareQuickTunnel(opts: QuickTunnelAgentOptions = {}): TunnelAgent {
  return {
    kind: 'cloudflare-quick',
    program: 'cloudflared',
    title: 'the cloudflared quick tunnel',
    locate: () => findCloudflared({ explicitPath: opts.explicitPath, packageBinDir: opts.packageBinDir }),
    create: (binary: string, tunnel: TunnelOptions) => new QuickTunnel({ ...tunnel, binary, urlTimeoutMs: opts.urlTimeoutMs }),
  };
}

export interface NamedTunnelAgentOptions extends Pick<FindOptions, 'explicitPath' | 'packageBinDir'> {
  /** The tunnel token (SecretStorage in the editor, DESKRELAY_TUNNEL_TOKEN for the CLI). */
  token: string | undefined;
  /** The public hostname routed to the relay in the dashboard. */
  hostname: string | undefined;
  connectTimeoutMs?: number;
}

export function cloudflareNamedTunnel(opts: NamedTunnelAgentOptions): TunnelAgent {
  return {
    kind: 'cloudflare-named',
    program: 'cloudflared',
    title: 'your named Cloudflare tunnel',
    locate: () => findCloudflared({ explicitPath: opts.explicitPath, packageBinDir: opts.packageBinDir }),
    create: (binary: string, tunnel: TunnelOptions) =>
      new NamedTunnel({ ...tunnel, binary, token: opts.token ?? '', hostname: requireHostname(opts.hostname), connectTimeoutMs: opts.connectTimeoutMs }),
  };
}

function requireHostname(hostname: string | undefined): string {
  if (hostname?.trim()) return hostname;
  throw new TunnelError(
    'The named Cloudflare tunnel needs its public hostname (the one routed to DeskRelay in the Cloudflare dashboard): set deskrelay.tunnel.hostname in VS Code, or pass --hostname to deskrelay serve.',
  );
}

/** The quick tunnel: cloudflared alone, no account, no secret. */
export const CLOUDFLARE_QUICK_KIND: TunnelKindInfo = {
  program: 'cloudflared',
  pathSetting: 'deskrelay.cloudflaredPath',
  needsHostname: false,
  installHint: INSTALL_HELP,
  install: installCloudflared,
};

/** The named tunnel: the user's public hostname and the tunnel token from the Cloudflare dashboard, both required. */
export const CLOUDFLARE_NAMED_KIND: TunnelKindInfo = {
  ...CLOUDFLARE_QUICK_KIND,
  secret: { name: 'Cloudflare tunnel token', required: true, env: ['DESKRELAY_TUNNEL_TOKEN', 'TUNNEL_TOKEN'] },
  needsHostname: true,
};
