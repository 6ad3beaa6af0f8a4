/**
 * cloudflared's quick tunnel as a TunnelAgent: the user's own cloudflared (found by find.ts),
 * run by QuickTunnel. A named Cloudflare tunnel (issue 17) would be a second agent here, sharing
 * find.ts, output.ts and isolation.ts.
 */
import type { TunnelAgent, TunnelOptions } from '../tunnel';
import { findCloudflared, type FindOptions } from './find';
import { QuickTunnel } from './quickTunnel';

export { findCloudflared, installCloudflared, INSTALL_HELP, type FindOptions } from './find';
export { QuickTunnel, type QuickTunnelOptions } from './quickTunnel';

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
