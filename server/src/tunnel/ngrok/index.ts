/** ngrok as a TunnelAgent: the user's own ngrok agent (v3). */
import { findKindProgram, programAgent, type ProgramKind } from '../find';
import type { TunnelAgent, TunnelKindInfo } from '../tunnel';
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

/** Optional secret: ngrok uses the authtoken in its own config otherwise. */
export const NGROK_KIND: TunnelKindInfo = {
  program: 'ngrok',
  pathSetting: 'deskrelay.ngrokPath',
  secret: { name: 'ngrok authtoken', required: false, env: ['NGROK_AUTHTOKEN'] },
  needsHostname: false,
  installHint: NGROK_INSTALL_HELP,
};

const NGROK: ProgramKind = { info: NGROK_KIND, flag: '--ngrok' };

export function findNgrok(explicitPath?: string): string {
  return findKindProgram(NGROK, explicitPath);
}

export function ngrokTunnel(opts: NgrokAgentOptions = {}): TunnelAgent {
  return programAgent(NGROK, opts.explicitPath, {
    kind: 'ngrok',
    title: 'your ngrok agent',
    create: (binary, tunnel) => new NgrokTunnel({ ...tunnel, binary, authtoken: opts.authtoken, domain: opts.domain, urlTimeoutMs: opts.urlTimeoutMs }),
  });
}
