import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stoppedError } from '../base';
import { freeLoopbackPort } from '../loopback';

/**
 * An empty config file of our own. Without `--config`, cloudflared reads ~/.cloudflared/config.yml,
 * whose ingress rules or tunnel id silently take over a quick tunnel (every request 404s).
 * Its environment is the other way in; env.ts keeps that to an allow-list.
 */
export function createIsolatedConfig(): { file: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-cloudflared-'));
  const file = path.join(dir, 'config.yml');
  writeFileSync(file, '', { mode: 0o600 });
  return {
    file,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * The flags every cloudflared run of ours gets: its own empty config (above), no self-update, and
 * metrics on a free loopback port (two copies must not collide). The caller removes `config`.
 */
export async function isolatedFlags(signal: AbortSignal): Promise<{ config: { file: string; remove(): void }; flags: string[] }> {
  const metricsPort = await freeLoopbackPort();
  if (signal.aborted) throw stoppedError();
  const config = createIsolatedConfig();
  return { config, flags: ['--no-autoupdate', '--config', config.file, '--metrics', `127.0.0.1:${metricsPort}`, '--loglevel', 'info'] };
}
