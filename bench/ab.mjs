#!/usr/bin/env node
// A/B of two (or more) relay builds on the same stand-in, alternating, to measure one change:
//   node bench/ab.mjs [--rounds 2] DIR_A DIR_B ...   (each DIR holds dist/cli.js)
// Per build and round (the order rotating from round to round): 100 paced streams (400 x 50 tokens, 10 ms apart): relay CPU s per million
// tokens and per-token latency p50/p99 (provider write → client read); then rounds of 100
// one-token replies arriving at once (1,000): TTFT p50 and relay CPU ms per stream.
// --floor: also the same client straight to the stand-in ("direct"), through nginx and through the
// Node floor (bench/floor.mjs), in the same alternation; the summary then gives each relay's
// figures ÷ nginx's and ÷ the floor's, and TTFT and token latency added over direct.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs, childrenOf, cpuSeconds, ensureNginx, median, ms, percentile, pool, rounds, runStream, sleep, startFloor, startNginx, startRelayCli, startStandin, stopProcess } from './lib.mjs';

const { option, flag, dirs } = benchArgs();
const R = option('rounds', 2);
const FLOOR = flag('floor');

const standin = await startStandin();
const start = (root) => startRelayCli(root, standin.value);
const relays = [];
const others = [];
if (FLOOR) {
  const providerBody = (plan) => JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: JSON.stringify(plan) }], stream: true });
  const direct = { name: 'direct', port: standin.value, path: '/api/chat', headers: { 'content-type': 'application/json' }, body: providerBody, pids: () => [] };
  const nginx = await startNginx(ensureNginx(), standin.value, mkdtempSync(join(tmpdir(), 'deskrelay-ab-nginx-')));
  others.push(direct, { name: 'nginx', child: nginx.child, port: nginx.port, path: '/api/chat', headers: direct.headers, body: providerBody, pids: () => [nginx.child.pid, ...childrenOf(nginx.child.pid)] });
  others.push(await startFloor(standin.value));
}
for (const d of dirs) relays.push(await start(d));
const cpuOf = (t) => t.pids().reduce((sum, pid) => sum + cpuSeconds(pid), 0);
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
const targets = [...others, ...relays];
for (const t of targets) await rounds(20, 200, () => runStream(t, { n: 5 }, agent));
const out = Object.fromEntries(targets.map((t) => [t.name, []]));
for (let round = 0; round < R; round++) {
  // Each round starts one target further on, so every target takes every place in the round in
  // turn: a target's figures depend on its place (what ran just before it: the previous target's
  // burst, the client's and the stand-in's heaps). One build measured at two places of one run
  // gave an added per-token p99 of 1.11 ms at the 4th and 2.40 ms at the 6th (bench/NOTES.md).
  for (const t of targets.map((_, i) => targets[(i + round) % targets.length])) {
    let c0 = cpuOf(t);
    const plan = { n: 50, interval: 10 };
    const rs = await pool(100, 400, async (i) => {
      if (i < 100) await sleep(i * 5);
      return runStream(t, plan, agent, { latencies: true });
    });
    const pacedCpu = cpuOf(t) - c0;
    const tokens = rs.reduce((s, r) => s + r.tokens, 0);
    const lat = rs.flatMap((r) => r.lat).map(ms);
    c0 = cpuOf(t);
    const bs = await rounds(100, 1000, () => runStream(t, { n: 1 }, agent));
    const burstCpu = cpuOf(t) - c0;
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
if (FLOOR) {
  // Ratios of medians; "added" = the path's median minus direct's, per round medians first.
  const m = (name, k) => median(out[name].map((r) => r[k]));
  const added = (name, k) => median(out[name].map((r, i) => r[k] - out.direct[i][k]));
  const x = (a, b) => `${(a / b).toFixed(2)}x`;
  console.log('against nginx and the Node floor (medians over rounds):');
  for (const name of ['nginx', 'node floor', ...relays.map((t) => t.name)]) {
    const cpu = m(name, 'pacedCpuPerM');
    const acc = m(name, 'burstCpuMsPerStream');
    const ttft = added(name, 'burstTtftP50');
    console.log(
      `  ${name}: paced CPU ${cpu.toFixed(1)} s/M (${x(cpu, m('nginx', 'pacedCpuPerM'))} nginx, ${x(cpu, m('node floor', 'pacedCpuPerM'))} floor); ` +
        `CPU per accepted stream ${acc.toFixed(3)} ms (${x(acc, m('nginx', 'burstCpuMsPerStream'))} nginx, ${x(acc, m('node floor', 'burstCpuMsPerStream'))} floor); ` +
        `burst TTFT added p50 ${ttft.toFixed(1)} ms (nginx ${added('nginx', 'burstTtftP50').toFixed(1)}, floor ${added('node floor', 'burstTtftP50').toFixed(1)}); ` +
        `token added p50 ${added(name, 'tokP50').toFixed(2)} p99 ${added(name, 'tokP99').toFixed(2)} ms`,
    );
  }
}
if (process.env.AB_JSON) writeFileSync(process.env.AB_JSON, JSON.stringify(out, null, 1));
agent.destroy();
for (const t of others) if (t.child) await stopProcess(t.child, t.name === 'nginx' ? 'SIGQUIT' : 'SIGTERM');
for (const t of relays) await stopProcess(t.child);
await stopProcess(standin.child);
