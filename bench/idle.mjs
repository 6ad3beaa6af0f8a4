#!/usr/bin/env node
// Idle memory per open stream (issue 28: "idle RSS per stream ≤ 30 KiB"), beside the Node floor:
//   node bench/idle.mjs [--rounds 3] [--streams 1000] DIR ...   (each DIR holds dist/cli.js)
// Per round, for the floor (bench/floor.mjs) and each relay build in turn, a fresh process on the
// same stand-in: warm it with 40 short streams, read its RSS, open `--streams` streams that each
// get one token and then a silent provider, read its RSS again 15.8 s after the first opened (the
// relay's 15 s keep-alive comments have fired by then; the floor sends none), then let them end.
// Before each reading the process runs a full GC (bench/gc-preload.cjs, on SIGUSR2), so garbage
// left from the warm-up or the opening burst does not count. Per stream = (with − before) ÷
// streams held, for RSS and for the live JS heap (heapUsed). The machine's kernel and allocator
// move the RSS figure, so only figures beside the floor's of the same run are comparable.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs, median, nowNs, rounds, rssBytes, runStream, sleep, startFloor, startRelayCli, startStandin, stopProcess } from './lib.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const { option, dirs } = benchArgs();
const R = option('rounds', 3);
const COUNT = option('streams', 1000);
const HOLD_MS = 17_000;
const READ_AT_MS = 15_800;

const standin = await startStandin();
const makers = [{ name: 'node floor', start: () => startFloor(standin.value) }, ...dirs.map((d) => ({ name: d, start: () => startRelayCli(d, standin.value) }))];
const figures = new Map(makers.map((m) => [m.name, { rss: [], heap: [] }]));
const memoryFile = join(mkdtempSync(join(tmpdir(), 'deskrelay-idle-')), 'memory.json');
process.env.NODE_OPTIONS = `--expose-gc --require ${join(HERE, 'gc-preload.cjs')}`;
process.env.BENCH_MEMORY_FILE = memoryFile;

/** The process's memory after a full GC: its RSS and its live JS heap, in bytes. */
async function memoryOf(child) {
  rmSync(memoryFile, { force: true });
  child.kill('SIGUSR2');
  while (!existsSync(memoryFile)) await sleep(20);
  await sleep(50);
  const m = JSON.parse(readFileSync(memoryFile, 'utf8'));
  return { rss: rssBytes(child.pid), heap: m.heapUsed };
}

async function measure(maker) {
  const target = await maker.start();
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  try {
    await rounds(20, 40, () => runStream(target, { n: 3 }, agent));
    await sleep(1_000);
    const before = await memoryOf(target.child);
    let held = 0;
    const opened = nowNs();
    const streams = Array.from({ length: COUNT }, () => runStream(target, { n: 2, hold: HOLD_MS }, agent, { onFirst: () => held++ }).catch(() => undefined));
    while (Number(nowNs() - opened) / 1e6 < READ_AT_MS) await sleep(100);
    const withStreams = await memoryOf(target.child);
    await Promise.all(streams);
    const per = (field) => (withStreams[field] - before[field]) / Math.max(1, held) / 1024;
    return { held, rss: per('rss'), heap: per('heap') };
  } finally {
    agent.destroy();
    await stopProcess(target.child);
  }
}

for (let round = 1; round <= R; round++) {
  for (const maker of makers) {
    const { held, rss, heap } = await measure(maker);
    figures.get(maker.name).rss.push(rss);
    figures.get(maker.name).heap.push(heap);
    console.log(`round ${round} ${maker.name}: ${held}/${COUNT} held; per idle stream ${rss.toFixed(1)} KiB RSS, ${heap.toFixed(1)} KiB live JS heap (load ${loadavg()[0].toFixed(1)})`);
  }
}
const floor = figures.get('node floor');
console.log('\nmedians, per idle stream:');
for (const [name, f] of figures) {
  const show = (field, unit) => {
    const m = median(f[field]);
    return `${m.toFixed(1)} KiB ${unit}${name === 'node floor' ? '' : ` (${(m / median(floor[field])).toFixed(2)}x the floor)`} [${f[field].map((x) => x.toFixed(1)).join(', ')}]`;
  };
  console.log(`  ${name}: ${show('rss', 'RSS')}; ${show('heap', 'live JS heap')}`);
}
await stopProcess(standin.child);
