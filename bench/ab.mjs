#!/usr/bin/env node
// A/B of two (or more) relay builds on the same stand-in, alternating, to measure one change:
//   node bench/ab.mjs [--rounds 2] DIR_A DIR_B ...   (each DIR holds dist/cli.js)
// Per build and round: 100 paced streams (400 x 50 tokens, 10 ms apart): relay CPU s per million
// tokens and per-token latency p50/p99 (provider write → client read); then rounds of 100
// one-token replies arriving at once (1,000): TTFT p50 and relay CPU ms per stream.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, median, ms, percentile, pool, rounds, runStream, sleep, spawnReady, stopProcess } from './lib.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const ri = args.indexOf('--rounds');
const R = ri === -1 ? 2 : Number(args[ri + 1]);
const dirs = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--rounds').map((d) => resolve(d));

const standin = await spawnReady(process.execPath, [join(HERE, 'standin.mjs')], { ready: (o) => (o.includes('\n') ? JSON.parse(o.split('\n')[0]).port : undefined) });
async function start(root) {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-ab-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ activeProvider: 'bench', maxConcurrentStreams: 1500, providers: [{ id: 'bench', kind: 'ollama', baseUrl: `http://127.0.0.1:${standin.value}`, model: 'bench' }] }));
  const r = await spawnReady(process.execPath, [join(root, 'dist/cli.js'), 'serve', '--port', '0', '--config', config], {
    env: { DESKRELAY_CONFIG_DIR: dir },
    ready: (o) => {
      const url = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(o);
      const token = /"token":"(dr_[A-Za-z0-9_-]+)"/.exec(o);
      return url && token ? { port: Number(url[2]), token: token[1] } : undefined;
    },
  });
  return {
    child: r.child,
    name: root,
    port: r.value.port,
    path: '/v1/chat/stream',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${r.value.token}` },
    body: (plan) => JSON.stringify({ messages: [{ role: 'user', content: JSON.stringify(plan) }] }),
  };
}
const relays = [];
for (const d of dirs) relays.push(await start(d));
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
for (const t of relays) await rounds(20, 200, () => runStream(t, { n: 5 }, agent));
const out = Object.fromEntries(dirs.map((d) => [d, []]));
for (let round = 0; round < R; round++) {
  for (const t of relays) {
    let c0 = cpuSeconds(t.child.pid);
    const plan = { n: 50, interval: 10 };
    const rs = await pool(100, 400, async (i) => {
      if (i < 100) await sleep(i * 5);
      return runStream(t, plan, agent, { latencies: true });
    });
    const pacedCpu = cpuSeconds(t.child.pid) - c0;
    const tokens = rs.reduce((s, r) => s + r.tokens, 0);
    const lat = rs.flatMap((r) => r.lat).map(ms);
    c0 = cpuSeconds(t.child.pid);
    const bs = await rounds(100, 1000, () => runStream(t, { n: 1 }, agent));
    const burstCpu = cpuSeconds(t.child.pid) - c0;
    const ttft = bs.map((r) => ms(Number(r.first - r.t0)));
    const row = { pacedCpuPerM: (pacedCpu / tokens) * 1e6, tokP50: percentile(lat, 50), tokP99: percentile(lat, 99), burstTtftP50: percentile(ttft, 50), burstCpuMsPerStream: (burstCpu / bs.length) * 1000 };
    out[t.name].push(row);
    console.log(`${t.name} r${round}: paced CPU ${row.pacedCpuPerM.toFixed(1)} s/M, token p50 ${row.tokP50.toFixed(2)} p99 ${row.tokP99.toFixed(2)} ms; burst TTFT p50 ${row.burstTtftP50.toFixed(1)} ms, CPU ${row.burstCpuMsPerStream.toFixed(3)} ms/stream`);
  }
}
console.log('median over rounds:');
for (const [d, rows] of Object.entries(out)) {
  const m = (k) => median(rows.map((r) => r[k]));
  console.log(`  ${d}: paced CPU ${m('pacedCpuPerM').toFixed(1)} s/M, token p50 ${m('tokP50').toFixed(2)} p99 ${m('tokP99').toFixed(2)} ms; burst TTFT p50 ${m('burstTtftP50').toFixed(1)} ms, CPU ${m('burstCpuMsPerStream').toFixed(3)} ms/stream`);
}
agent.destroy();
for (const t of relays) await stopProcess(t.child);
await stopProcess(standin.child);
