/** ngrok as a TunnelAgent: the user's own ngrok agent (v3). */
import { findProgram } from '../find';
import type { TunnelAgent, TunnelKindInfo, TunnelOptions } from '../tunnel';
import { NgrokTunnel } from './ngrokTunnel';

export { NgrokTunnel, type NgrokTunnelOptions } from './ngrokTunnel';
export { parseRecord, startedUrl } from './output';

export const NGROK_INSTALL_HELP = [
  'Install ngrok and add your authtoken, then try again:',
  '  Linux:   https://ngrok.com/download (apt, snap or the tarball)',
  '  macOS:   brew install ngrok',
  '  Windows: winget install --id ngrok.ngrok',
  '  then:    ngrok config add-authtoken <token from https://dashboard.ngrok.com/get-started/your-authtoken>',
  'Or point DeskRelay at it: the deskrelay.ngrokPath setting or --ngrok PATH.',
].join('\n');

export interface NgrokAgentOptions {
  explicitPath?: string;
  authtoken?: string;
  domain?: string;
  urlTimeoutMs?: number;
}

export function findNgrok(explicitPath?: string): string {
  return findProgram({ program: 'ngrok', explicitPath, explicitSource: 'deskrelay.ngrokPath / --ngrok', installHelp: NGROK_INSTALL_HELP });
}

export function ngrokTunnel(opts: NgrokAgentOptions = {}): TunnelAgent {
  return {
    kind: 'ngrok',
    program: 'ngrok',
    title: 'your ngrok agent',
    locate: () => findNgrok(opts.explicitPath),
    create: (binary: string, tunnel: TunnelOptions) =>
      new NgrokTunnel({ ...tunnel, binary, authtoken: opts.authtoken, domain: opts.domain, urlTimeoutMs: opts.urlTimeoutMs }),
  };
}

export const NGROK_KIND: TunnelKindInfo = {
  program: 'ngrok',
  pathSetting: 'deskrelay.ngrokPath',
  // Optional: ngrok uses the authtoken in its own config otherwise.
  secret: { name: 'ngrok authtoken', required: false, env: ['NGROK_AUTHTOKEN'] },
  needsHostname: false,
  installHint: NGROK_INSTALL_HELP,
};
