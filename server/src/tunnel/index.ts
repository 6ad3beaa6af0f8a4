/**
 * Tunnels: the contract (tunnel.ts, with the life cycle), the pieces every agent shares (the
 * watchdog-supervised process, the environment allow-list, the health probe, loopback, errors),
 * and one folder per agent (cloudflared/ today).
 */
export type { Tunnel, TunnelAgent, TunnelEvents, TunnelHealth, TunnelKind, TunnelOptions, TunnelState } from './tunnel';
export { AgentTunnel, stopAllTunnelsSync } from './base';
export { TunnelError, type TunnelErrorCode } from './errors';
export { agentEnv, PASS_ENV_VARIABLE } from './env';
export { forwardUrl } from './loopback';
export type { ProbeOptions } from './probe';
export {
  cloudflareQuickTunnel,
  findCloudflared,
  installCloudflared,
  INSTALL_HELP,
  QuickTunnel,
  type FindOptions,
  type QuickTunnelAgentOptions,
  type QuickTunnelOptions,
} from './cloudflared';
