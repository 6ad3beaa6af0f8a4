#!/usr/bin/env node
// Idle memory per open stream (issue 28: "idle RSS per stream ≤ 30 KiB"), beside the Node floor:
//   node bench/idle.mjs [--rounds 3] [--streams 1000] DIR ...   (each DIR holds dist/cli.js)
// Per round, for the floor (bench/floor.mjs) and each relay build in turn, a fresh process on the
// same stand-in: warm it with 40 short streams, read its RSS, open `--streams` streams that each
// get one token and then a silent provider, read its RSS again 15.8 s after the first opened (the
// relay's 15 s keep-alive comments have fired by then; the floor sends none), then let them end.
// RSS per stream = (with − before) ÷ streams held. The machine's kernel and allocator move this
// figure, so only the builds' figures beside the floor's of the same run are comparable.
import { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, nowNs, rounds, rssBytes, runStream, sleep, spawnReady, startFloor, startRelayCli, stopProcess } from './lib.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : fallback);
const R = option('rounds', 3);
const COUNT = option('streams', 1000);
const dirs = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--')).map((d) => resolve(d));
const HOLD_MS = 17_000;
const READ_AT_MS = 15_800;

const standin = await spawnReady(process.execPath, [join(HERE, 'standin.mjs')], { ready: (o) => (o.includes('\n') ? JSON.parse(o.split('\n')[0]).port : undefined) });
const makers = [{ name: 'node floor', start: () => startFloor(standin.value) }, ...dirs.map((d) => ({ name: d, start: () => startRelayCli(d, standin.value) }))];
const figures = new Map(makers.map((m) => [m.name, []]));

async function measure(maker) {
  const target = await maker.start();
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  try {
    await rounds(20, 40, () => runStream(target, { n: 3 }, agent));
    await sleep(1_000);
    const before = rssBytes(target.child.pid);
    let held = 0;
    const opened = nowNs();
    const streams = Array.from({ length: COUNT }, () => runStream(target, { n: 2, hold: HOLD_MS }, agent, { onFirst: () => held++ }).catch(() => undefined));
    while (Number(nowNs() - opened) / 1e6 < READ_AT_MS) await sleep(100);
    const withStreams = rssBytes(target.child.pid);
    await Promise.all(streams);
    return { held, kib: (withStreams - before) / Math.max(1, held) / 1024 };
  } finally {
    agent.destroy();
    await stopProcess(target.child);
  }
}

for (let round = 1; round <= R; round++) {
  for (const maker of makers) {
    const { held, kib } = await measure(maker);
    figures.get(maker.name).push(kib);
    console.log(`round ${round} ${maker.name}: ${held}/${COUNT} held, ${kib.toFixed(1)} KiB RSS per idle stream (load ${loadavg()[0].toFixed(1)})`);
  }
}
const floor = median(figures.get('node floor'));
console.log('\nmedians:');
for (const [name, list] of figures) {
  const m = median(list);
  console.log(`  ${name}: ${m.toFixed(1)} KiB per idle stream${name === 'node floor' ? '' : ` (${(m / floor).toFixed(2)}x the floor)`}  [${list.map((x) => x.toFixed(1)).join(', ')}]`);
}
await stopProcess(standin.child);
