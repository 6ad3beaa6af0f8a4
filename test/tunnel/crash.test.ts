import { spawn } from 'node:child_process';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isAlive, makeTls, startRelay, STANDIN, standinEnv, waitFor, type Relay, type Tls } from './helpers';

// Our own process dying without cleanup (SIGKILL, an editor crash) must not leave cloudflared
// running: the real QuickTunnel runs in a child Node process, which the test kills with SIGKILL.
let tls: Tls;
let relay: Relay;
let harness: string;

beforeAll(async () => {
  tls = makeTls();
  relay = await startRelay();
  harness = path.join(tls.dir, 'crash-harness.cjs');
  await build({
    entryPoints: [path.join(__dirname, 'crash-harness.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile: harness,
    logLevel: 'error',
  });
});

afterAll(async () => {
  await relay.close();
  tls.cleanup();
});

it('cloudflared dies within 10 s when the process that started it is SIGKILLed', async () => {
  const infoFile = path.join(tls.dir, 'crash-info.json');
  const child = spawn(process.execPath, [harness], {
    env: {
      ...standinEnv(tls, infoFile, 'normal'),
      HARNESS_CLOUDFLARED: STANDIN,
      HARNESS_RELAY_URL: relay.url,
      HARNESS_CA: tls.cert,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  let pid: number | undefined;
  try {
    await waitFor(() => out.includes('\n') || child.exitCode !== null, 20_000, 'the harness to report the tunnel up');
    expect(err).toBe('');
    const started = JSON.parse(out.trim()) as { url: string; pid: number };
    pid = started.pid;
    expect(started.url).toMatch(/\.trycloudflare\.com$/);
    expect(isAlive(pid)).toBe(true);

    child.kill('SIGKILL');
    const t0 = Date.now();
    await waitFor(() => !isAlive(pid), 10_000, 'cloudflared to die after its owner was killed');
    expect(Date.now() - t0).toBeLessThan(10_000);
  } finally {
    child.kill('SIGKILL');
    if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
  }
});
