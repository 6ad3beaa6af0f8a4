/** Tailscale Funnel (public) and Serve (tailnet only) as TunnelAgents: the user's own tailscale CLI. */
import { findKindProgram, programAgent, type ProgramKind } from '../find';
import type { TunnelAgent, TunnelKindInfo } from '../tunnel';
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

/** Funnel and Serve: the tailscale CLI, logged in; no secret of ours, the node's name is the hostname. */
export const TAILSCALE_KIND: TunnelKindInfo = {
  program: 'tailscale',
  pathSetting: 'deskrelay.tailscalePath',
  needsHostname: false,
  installHint: TAILSCALE_INSTALL_HELP,
};

const TAILSCALE: ProgramKind = {
  info: TAILSCALE_KIND,
  flag: '--tailscale',
  wellKnown: { darwin: ['/Applications/Tailscale.app/Contents/MacOS/Tailscale'], win32: ['C:\\Program Files\\Tailscale\\tailscale.exe'] },
};

export function findTailscale(explicitPath?: string): string {
  return findKindProgram(TAILSCALE, explicitPath);
}

export function tailscaleTunnel(opts: TailscaleAgentOptions): TunnelAgent {
  const funnel = opts.mode === 'funnel';
  return programAgent(TAILSCALE, opts.explicitPath, {
    kind: funnel ? 'tailscale-funnel' : 'tailscale-serve',
    title: funnel ? 'Tailscale Funnel' : 'Tailscale Serve (tailnet only)',
    create: (binary, tunnel) => new TailscaleTunnel({ ...tunnel, binary, mode: opts.mode, publishTimeoutMs: opts.publishTimeoutMs, pollMs: opts.pollMs }),
  });
}
