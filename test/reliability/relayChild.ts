/**
 * A RelayServer in a process of its own, so its memory can be read from /proc without the test
 * runner's. Bundled from source by `spawnRelayChild` (esbuild), so it is always the code under test.
 * argv[2]: JSON { providerUrl, model, maxStreams?, keepAliveMs?, bodyTimeoutMs? }. Prints one JSON line { url, token, pid };
 * stdin command `mem`: one line of process.memoryUsage() after a full GC.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { announce, childRelay, onRelayChildCommands } from '../helpers/relayChildCommands';

const opts = JSON.parse(process.argv[2] ?? '{}') as { providerUrl: string; model: string; maxStreams?: number; keepAliveMs?: number; bodyTimeoutMs?: number };
const configDir = mkdtempSync(join(tmpdir(), 'deskrelay-child-'));
const relay = childRelay(opts, {
  version: '0.0.0-child',
  maxConcurrentStreams: () => opts.maxStreams ?? 8,
  configDir,
  keepAliveMs: opts.keepAliveMs,
  bodyTimeoutMs: opts.bodyTimeoutMs,
});

void relay.start().then(announce);
onRelayChildCommands(
  (command) => {
    if (command === 'mem') {
      (globalThis as { gc?: () => void }).gc?.();
      process.stdout.write(`${JSON.stringify(process.memoryUsage())}\n`);
    }
  },
  () =>
    void relay.stop().then(() => {
      rmSync(configDir, { recursive: true, force: true });
      process.exit(0);
    }),
);
