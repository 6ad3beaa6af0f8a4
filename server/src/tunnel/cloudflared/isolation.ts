import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

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
