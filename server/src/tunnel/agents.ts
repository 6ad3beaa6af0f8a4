import { CLOUDFLARE_NAMED_KIND, CLOUDFLARE_QUICK_KIND, cloudflareNamedTunnel, cloudflareQuickTunnel } from './cloudflared';
import { NGROK_KIND, ngrokTunnel } from './ngrok';
import { TAILSCALE_KIND, tailscaleTunnel } from './tailscale';
import type { TunnelAgent, TunnelKind, TunnelKindInfo } from './tunnel';

/** Everything a host knows about its tunnel, read at every start: settings (editor) or flags and env (CLI). */
export interface TunnelSettings {
  kind: TunnelKind;
  cloudflaredPath?: string;
  /** Where "Install cloudflared" put it (the extension's storage). */
  cloudflaredPackageDir?: string;
  tailscalePath?: string;
  ngrokPath?: string;
  /** cloudflare-named: the public hostname (required). ngrok: a domain of the user's (optional). */
  hostname?: string;
  /** cloudflare-named: the tunnel token. ngrok: an authtoken (optional: ngrok's own config otherwise). Never logged. */
  token?: string;
}

/** The agent for a kind, with its settings. */
export function tunnelAgentFor(s: TunnelSettings): TunnelAgent {
  switch (s.kind) {
    case 'cloudflare-named':
      return cloudflareNamedTunnel({ explicitPath: s.cloudflaredPath, packageBinDir: s.cloudflaredPackageDir, token: s.token, hostname: s.hostname });
    case 'tailscale-funnel':
      return tailscaleTunnel({ mode: 'funnel', explicitPath: s.tailscalePath });
    case 'tailscale-serve':
      return tailscaleTunnel({ mode: 'serve', explicitPath: s.tailscalePath });
    case 'ngrok':
      return ngrokTunnel({ explicitPath: s.ngrokPath, authtoken: s.token, domain: s.hostname });
    default:
      return cloudflareQuickTunnel({ explicitPath: s.cloudflaredPath, packageBinDir: s.cloudflaredPackageDir });
  }
}

/** Each kind as its agent's folder describes it: a new kind is its folder plus one line here. */
const KINDS: Record<TunnelKind, TunnelKindInfo> = {
  'cloudflare-quick': CLOUDFLARE_QUICK_KIND,
  'cloudflare-named': CLOUDFLARE_NAMED_KIND,
  'tailscale-funnel': TAILSCALE_KIND,
  'tailscale-serve': TAILSCALE_KIND,
  ngrok: NGROK_KIND,
};

/** What the hosts need to know about a kind (program, path setting, secret, hostname, install hint). */
export function tunnelKindInfo(kind: TunnelKind): TunnelKindInfo {
  return KINDS[kind] ?? CLOUDFLARE_QUICK_KIND;
}

/** Which secret a kind takes, for hosts that ask for it: its name in messages, or undefined. */
export function tunnelSecretName(kind: TunnelKind): string | undefined {
  return tunnelKindInfo(kind).secret?.name;
}
