/**
 * A RelayServer in a process of its own, so its memory can be read from /proc without the test
 * runner's. Bundled from source by `spawnRelayChild` (esbuild), so it is always the code under test.
 * argv[2]: JSON { providerUrl, model, maxStreams?, keepAliveMs? }. Prints one JSON line { url, token, pid }.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RelayServer } from '../../server/src/session/relay';

const opts = JSON.parse(process.argv[2] ?? '{}') as { providerUrl: string; model: string; maxStreams?: number; keepAliveMs?: number };
const configDir = mkdtempSync(join(tmpdir(), 'deskrelay-child-'));
const relay = new RelayServer({
  host: '127.0.0.1',
  port: 0,
  version: '0.0.0-child',
  providers: { active: () => ({ ok: true, config: { id: 'local', kind: 'ollama', baseUrl: opts.providerUrl, model: opts.model } }) },
  keys: { get: async () => undefined, howToSet: () => 'not needed' },
  workspaces: () => 0,
  maxConcurrentStreams: () => opts.maxStreams ?? 8,
  configDir,
  keepAliveMs: opts.keepAliveMs,
});

void relay.start().then(({ url, token }) => process.stdout.write(`${JSON.stringify({ url, token, pid: process.pid })}\n`));
const stop = () =>
  void relay.stop().then(() => {
    rmSync(configDir, { recursive: true, force: true });
    process.exit(0);
  });
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// The parent going away (test runner killed) takes us with it. A `mem` line asks for memory after a full GC.
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d: string) => {
  pending += d;
  let nl: number;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const command = pending.slice(0, nl).trim();
    pending = pending.slice(nl + 1);
    if (command === 'mem') {
      (globalThis as { gc?: () => void }).gc?.();
      process.stdout.write(`${JSON.stringify(process.memoryUsage())}\n`);
    }
  }
});
process.stdin.on('end', stop);
