#!/usr/bin/env node
// What each live stream keeps on the JS heap (issue 28: a young-generation scavenge copies what
// the live streams allocated since the last one, and its pause is where the per-token p99
// waits), beside the Node floor:
//   node bench/heap.mjs [--tokens 1] [--top 25] [DIR ...]   (each DIR holds dist/cli.js; default this tree)
// Per target, a fresh process (`--heapsnapshot-signal`) on the bench's stand-in: 100 keep-alive
// sockets warmed with short streams, heap snapshot A, then 100 streams held open after
// `--tokens` tokens (1: one token then silence; more: tokens 100 ms apart, read mid-reply),
// snapshot B. B − A ÷ 100, by V8 node type and name (shallow sizes), and the closures added per
// stream by source line (through the relay bundle's source map). The snapshots are ~20 MB each,
// written to a temp folder and deleted.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs, rounds, runStream, sleep, startFloor, startRelayCli, startStandin, stopProcess } from './lib.mjs';

const { option, dirs } = benchArgs();
const TOKENS = option('tokens', 1);
const TOP = option('top', 25);
const HELD = 100;
if (dirs.length === 0) dirs.push(join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..'));

const standin = await startStandin();
const out = mkdtempSync(join(tmpdir(), 'deskrelay-heap-'));
process.env.NODE_OPTIONS = `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${out}`;

/** One snapshot of the target's heap: signals it, waits for the file to be whole, reads it. */
async function snapshot(child) {
  const before = new Set(readdirSync(out));
  child.kill('SIGUSR2');
  for (;;) {
    await sleep(300);
    const file = readdirSync(out).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) continue;
    try {
      const snap = JSON.parse(readFileSync(join(out, file), 'utf8'));
      rmSync(join(out, file));
      return snap;
    } catch {
      // Still being written.
    }
  }
}

/** Per node type:name, [count, bytes]; ids; and the closures by script position. */
function index(snap) {
  const m = snap.snapshot.meta;
  const nf = m.node_fields.length;
  const types = m.node_types[0];
  const { nodes: N, strings: S, locations: L } = snap;
  const byKind = new Map();
  for (let i = 0; i < N.length; i += nf) {
    const type = types[N[i]];
    const name = type.endsWith('string') ? '' : S[N[i + 1]].slice(0, 60);
    const k = `${type}:${name}`;
    const e = byKind.get(k) ?? [0, 0];
    e[0]++;
    e[1] += N[i + 3];
    byKind.set(k, e);
  }
  const closures = new Map();
  const lf = m.location_fields.length;
  for (let i = 0; i < L.length; i += lf) {
    const ni = L[i];
    if (types[N[ni]] !== 'closure') continue;
    const k = `${L[i + 1]}:${L[i + 2]}:${L[i + 3]}|${S[N[ni + 1]]}`;
    closures.set(k, (closures.get(k) ?? 0) + 1);
  }
  return { byKind, closures };
}

async function measure(target, map) {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  for (let i = 0; i < 3; i++) await rounds(HELD, HELD, () => runStream(target, { n: 5 }, agent));
  const a = index(await snapshot(target.child));
  const plan = TOKENS <= 1 ? { n: 2, hold: 15_000 } : { n: 1000, interval: 100 };
  const held = Promise.all(Array.from({ length: HELD }, () => runStream(target, plan, agent).catch(() => undefined)));
  await sleep(TOKENS <= 1 ? 1_500 : TOKENS * 100 + 50);
  const b = index(await snapshot(target.child));
  await stopProcess(target.child);
  agent.destroy();
  await held;
  const rows = [...b.byKind].map(([k, [c, bytes]]) => [k, (c - (a.byKind.get(k)?.[0] ?? 0)) / HELD, (bytes - (a.byKind.get(k)?.[1] ?? 0)) / HELD]);
  // Compiled code (the JIT at work between the snapshots) is not the streams'; buffers' bytes are outside the heap.
  const sum = (keep) => rows.filter((r) => keep(r[0])).reduce((s, r) => s + r[2], 0);
  const heap = sum((k) => !k.startsWith('native:') && !k.startsWith('code:'));
  const native = sum((k) => k.startsWith('native:'));
  console.log(`\n${target.name}: ${heap.toFixed(0)} B of JS heap per held stream (${TOKENS} token${TOKENS === 1 ? '' : 's'} in; ${native.toFixed(0)} B more outside the heap)`);
  for (const [k, c, bytes] of rows.filter((r) => !r[0].startsWith('code:')).sort((x, y) => y[2] - x[2]).slice(0, TOP)) console.log(`  ${bytes.toFixed(0).padStart(6)} B ${c.toFixed(2).padStart(6)} × ${k}`);
  if (!map) return;
  const added = [...b.closures].map(([k, c]) => [k, (c - (a.closures.get(k) ?? 0)) / HELD]).filter(([, c]) => c >= 0.5);
  console.log('  closures added per stream, in the relay bundle:');
  for (const [k, c] of added.sort((x, y) => y[1] - x[1])) {
    const [pos, name] = k.split('|');
    const [, line, col] = pos.split(':').map(Number);
    const at = map.findEntry(line, col);
    // Other scripts (undici's bundle, Node's own) map wrongly through this map: only ours are named.
    if (at?.originalSource?.includes('server/src/')) console.log(`    ${c.toFixed(2)} × ${name || '(anonymous)'} ${at.originalSource.replace(/.*server\/src\//, 'server/src/')}:${at.originalLine + 1}`);
  }
}

await measure(await startFloor(standin.value));
for (const dir of dirs) {
  const map = new SourceMap(JSON.parse(readFileSync(join(dir, 'dist/cli.js.map'), 'utf8')));
  await measure(await startRelayCli(dir, standin.value), map);
}
await stopProcess(standin.child);
rmSync(out, { recursive: true, force: true });
