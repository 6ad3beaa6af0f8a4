/** Tailscale Funnel (public) and Serve (tailnet only) as TunnelAgents: the user's own tailscale CLI. */
import { findProgram } from '../find';
import type { TunnelAgent, TunnelKindInfo, TunnelOptions } from '../tunnel';
import { TailscaleTunnel, type TailscaleMode } from './tailscaleTunnel';

export { TailscaleTunnel, type TailscaleMode, type TailscaleTunnelOptions } from './tailscaleTunnel';
export { findOurHandler, parseServeConfig, type ServeConfig } from './serveConfig';

export const TAILSCALE_INSTALL_HELP = [
  'Install Tailscale and log in, then try again:',
  '  Linux:   curl -fsSL https://tailscale.com/install.sh | sh, then sudo tailscale up',
  '  macOS:   the Tailscale app (App Store or https://tailscale.com/download), signed in',
  '  Windows: winget install --id Tailscale.Tailscale, signed in',
  'Or point DeskRelay at the CLI: the deskrelay.tailscalePath setting or --tailscale PATH.',
].join('\n');

export interface TailscaleAgentOptions {
  mode: TailscaleMode;
  /** The deskrelay.tailscalePath setting or --tailscale. */
  explicitPath?: string;
  publishTimeoutMs?: number;
  pollMs?: number;
}

export function findTailscale(explicitPath?: string): string {
  return findProgram({
    program: 'tailscale',
    explicitPath,
    explicitSource: 'deskrelay.tailscalePath / --tailscale',
    wellKnown:
      process.platform === 'darwin'
        ? ['/Applications/Tailscale.app/Contents/MacOS/Tailscale']
        : process.platform === 'win32'
          ? ['C:\\Program Files\\Tailscale\\tailscale.exe']
          : [],
    installHelp: TAILSCALE_INSTALL_HELP,
  });
}

export function tailscaleTunnel(opts: TailscaleAgentOptions): TunnelAgent {
  return {
    kind: opts.mode === 'funnel' ? 'tailscale-funnel' : 'tailscale-serve',
    program: 'tailscale',
    title: opts.mode === 'funnel' ? 'Tailscale Funnel' : 'Tailscale Serve (tailnet only)',
    locate: () => findTailscale(opts.explicitPath),
    create: (binary: string, tunnel: TunnelOptions) =>
      new TailscaleTunnel({ ...tunnel, binary, mode: opts.mode, publishTimeoutMs: opts.publishTimeoutMs, pollMs: opts.pollMs }),
  };
}

/** Funnel and Serve: the tailscale CLI, logged in; no secret of ours, the node's name is the hostname. */
export const TAILSCALE_KIND: TunnelKindInfo = {
  program: 'tailscale',
  pathSetting: 'deskrelay.tailscalePath',
  needsHostname: false,
  installHint: TAILSCALE_INSTALL_HELP,
};
