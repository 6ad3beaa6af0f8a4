/**
 * Tunnels: the contract (tunnel.ts, with the life cycle), the pieces every agent shares (the
 * watchdog-supervised process, the environment allow-list, the health probe, loopback, errors),
 * and one folder per agent: cloudflared/ (quick and named tunnels), tailscale/ (Funnel, Serve), ngrok/.
 */
export type { Tunnel, TunnelAgent, TunnelEvents, TunnelHealth, TunnelKind, TunnelKindInfo, TunnelOptions, TunnelState } from './tunnel';
export { isTunnelKind, TUNNEL_KINDS } from './tunnel';
export { tunnelAgentFor, tunnelKindInfo, tunnelSecretName, type TunnelSettings } from './agents';
export { findNgrok, NGROK_INSTALL_HELP, NgrokTunnel, ngrokTunnel } from './ngrok';
export { findTailscale, TAILSCALE_INSTALL_HELP, TailscaleTunnel, tailscaleTunnel } from './tailscale';
export { AgentTunnel, stopAllTunnelsSync } from './base';
export { TunnelError, type TunnelErrorCode } from './errors';
export { agentEnv, PASS_ENV_VARIABLE } from './env';
export { forwardUrl } from './loopback';
export type { ProbeOptions } from './probe';
export {
  cloudflareNamedTunnel,
  cloudflareQuickTunnel,
  NamedTunnel,
  namedTunnelUrl,
  findCloudflared,
  installCloudflared,
  INSTALL_HELP,
  QuickTunnel,
  type FindOptions,
  type QuickTunnelAgentOptions,
  type QuickTunnelOptions,
} from './cloudflared';
