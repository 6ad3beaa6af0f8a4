// Issue 26: what 100 registered devices cost per request. Two figures, run once, short:
//   1. DeviceRegistry.match() itself (the real module, bundled here with esbuild): µs per call
//      with 0 and 100 devices, for a device token and for the pairing token.
//   2. Real HTTP: `deskrelay serve` (dist/cli.js), sequential keep-alive GET /v1/remote/info,
//      p50 and mean µs per request with 0 devices, then with 100 devices (the token of the last
//      one registered, and the pairing token).
// Usage: node scripts/build.mjs && node bench/devices.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const nowNs = () => process.hrtime.bigint();

async function micro() {
  const out = await build({ entryPoints: [join(ROOT, 'server/src/store/devices.ts')], bundle: true, platform: 'node', format: 'esm', write: false });
  const mod = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
  const logger = { info() {}, warn() {}, error() {} };
  const rows = [];
  for (const count of [0, 1, 100]) {
    const registry = mod.DeviceRegistry.ephemeral(logger);
    let last = 'drd_none';
    for (let i = 0; i < count; i++) last = (await registry.register(`device ${i}`)).token;
    const N = 200_000;
    for (let i = 0; i < 20_000; i++) registry.match(last);
    const t0 = nowNs();
    for (let i = 0; i < N; i++) registry.match(last);
    const perCall = Number(nowNs() - t0) / N / 1000;
    rows.push({ devices: count, 'µs per match()': perCall.toFixed(2) });
  }
  return rows;
}

function get(port, agent, token) {
  return new Promise((resolveP, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/remote/info', agent, headers: { Authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolveP() : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

async function timed(port, token, n) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 500; i++) await get(port, agent, token);
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = nowNs();
    await get(port, agent, token);
    samples.push(Number(nowNs() - t0) / 1000);
  }
  agent.destroy();
  samples.sort((a, b) => a - b);
  return { 'p50 µs': samples[Math.floor(n / 2)].toFixed(0), 'mean µs': (samples.reduce((a, b) => a + b, 0) / n).toFixed(0) };
}

async function http() {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-bench-devices-'));
  const child = spawn(process.execPath, [join(ROOT, 'dist/cli.js'), 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: '' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  child.on('error', (err) => {
    throw err;
  });
  let out = '';
  const pairing = await new Promise((resolveP) => {
    child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = /\{"url":"[^"]+","token":"dr_[^"]+"\}/.exec(out);
      if (m) resolveP(JSON.parse(m[0]));
    });
  });
  const port = Number(new URL(pairing.url).port);
  const N = 5_000;
  const rows = [];
  try {
    rows.push({ devices: 0, token: 'pairing', ...(await timed(port, pairing.token, N)) });
    let last;
    for (let i = 0; i < 100; i++) {
      last = await new Promise((resolveP, reject) => {
        const req = request(
          { host: '127.0.0.1', port, method: 'POST', path: '/v1/devices', headers: { Authorization: `Bearer ${pairing.token}`, 'Content-Type': 'application/json' } },
          (res) => {
            let body = '';
            res.on('data', (c) => (body += c)).on('end', () => resolveP(JSON.parse(body)));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ name: `device ${i}` }));
      });
    }
    rows.push({ devices: 100, token: 'pairing', ...(await timed(port, pairing.token, N)) });
    rows.push({ devices: 100, token: 'last device', ...(await timed(port, last.token, N)) });
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

console.log(`node ${process.version}; load ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.table(await micro());
console.table(await http());
