#!/usr/bin/env node
// Flat-out A/B: one stream of N tokens as fast as the stand-in can write them, through each relay
// build given, alternating; relay CPU s per million tokens from /proc.
//   node bench/flat.mjs [--tokens 200000] [--rounds 3] DIR_A DIR_B ...
import { Agent } from 'node:http';
import { benchArgs, cpuSeconds, median, runStream, startRelayCli, startStandin, stopProcess } from './lib.mjs';

const { option, dirs } = benchArgs();
const N = option('tokens', 200_000);
const R = option('rounds', 3);

const standin = await startStandin();
const relays = [];
for (const root of dirs) {
  const relay = await startRelayCli(root, standin.value);
  relays.push({ root, child: relay.child, target: relay, cpu: [] });
}
const agent = new Agent({ keepAlive: true });
for (let round = 0; round < R; round++) {
  for (const r of relays) {
    const c0 = cpuSeconds(r.child.pid);
    const res = await runStream(r.target, { n: N, interval: 0 }, agent);
    if (res.tokens !== N) throw new Error(`${r.root}: ${res.tokens} of ${N} tokens`);
    r.cpu.push(((cpuSeconds(r.child.pid) - c0) / N) * 1e6);
  }
}
for (const r of relays) console.log(`${r.root}: relay CPU s per million tokens, flat out: median ${median(r.cpu).toFixed(2)} (${r.cpu.map((x) => x.toFixed(2)).join(' ')})`);
for (const r of relays) await stopProcess(r.child);
await stopProcess(standin.child);
agent.destroy();
