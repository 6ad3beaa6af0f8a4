#!/usr/bin/env node
// The workspace agent's tools at scale (issue 28): search, list_files and read_file on a generated
// repository of 50,000 files (~200 MiB) with a .gitignored node_modules of another 50,000.
//
//   node bench/agent.mjs [--tree DIR] [--rounds 3] [ROOT_A ROOT_B ...]
//
// Each ROOT is a source tree (default: this one); its server/src/agent/hosts/node/index.ts (the
// CLI's Workspace host, NodeWorkspace) is bundled with esbuild into a temp file and driven
// directly, in this process: a tool call through the agent door adds one model round trip and a
// JSON event per call, the same whatever the tree, and the figures here are what grows with it.
// Roots alternate round by round. The tree is generated once under --tree (default
// $TMPDIR/deskrelay-agent-tree) and reused.
//
// Layout: s1/ 12,500 files, s2/ 12,500, s3/ 25,000 (so a search under s1, s3 and the root shows
// how time grows with files), 250 files per folder, 2-4 folders deep, ~4 KiB each; node_modules/
// 50,000 small files, ignored by the root .gitignore. The rare string is in 3 files of the tree and
// in 50 files of node_modules (which a search must not report).
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AGENT_TREE_RARE, agentBenchArgs, median } from './lib.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const { tree: TREE, rounds: R, roots } = agentBenchArgs();
const RARE = AGENT_TREE_RARE;
const log = (m) => process.stdout.write(`[agent-bench] ${m}\n`);

function generate() {
  if (existsSync(join(TREE, '.complete'))) return;
  log(`generating the tree in ${TREE} (once)`);
  const t0 = Date.now();
  let seed = 1;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const words = ['const', 'value', 'result', 'return', 'function', 'import', 'export', 'await', 'config', 'stream', 'buffer', 'length', 'index', 'token', 'request', 'response'];
  const line = (i) => {
    let s = `  ${words[i % words.length]} x${i} = `;
    while (s.length < 60 + (i % 30)) s += `${words[Math.floor(rnd() * words.length)]}_${Math.floor(rnd() * 1000)} + `;
    return `${s}0;\n`;
  };
  const source = (n, rare) => {
    let s = `// generated file ${n}\nexport function f${n}(a, b) {\n`;
    const lines = 40 + Math.floor(rnd() * 40);
    for (let i = 0; i < lines; i++) s += i === 17 && rare ? `  const marker = '${RARE}';\n` : line(i + n);
    return `${s}}\n`;
  };
  mkdirSync(TREE, { recursive: true });
  writeFileSync(join(TREE, '.gitignore'), 'node_modules/\n*.log\n');
  writeFileSync(join(TREE, 'README.md'), '# generated\n');
  const rareAt = new Set([4_321, 23_456, 47_890]);
  let n = 0;
  let bytes = 0;
  for (const [part, count] of [['s1', 12_500], ['s2', 12_500], ['s3', 25_000]]) {
    for (let f = 0; f < count; f += 250) {
      const k = f / 250;
      const dir = join(TREE, part, `m${k % 5}`, `pkg${k}`, ...(k % 2 ? ['lib'] : []));
      mkdirSync(dir, { recursive: true });
      for (let i = 0; i < 250; i++, n++) {
        const text = source(n, rareAt.has(n));
        bytes += text.length;
        writeFileSync(join(dir, `file${i}.ts`), text);
      }
    }
  }
  for (let f = 0; f < 50_000; f += 250) {
    const dir = join(TREE, 'node_modules', `dep${f / 250}`, 'dist');
    mkdirSync(dir, { recursive: true });
    for (let i = 0; i < 250; i++) writeFileSync(join(dir, `m${i}.js`), `module.exports = ${f + i};${i === 7 ? ` // ${RARE}` : ''}\n`.repeat(12));
  }
  writeFileSync(join(TREE, '.complete'), `${n} files, ${bytes} bytes\n`);
  log(`generated ${n} files (${(bytes / 2 ** 20).toFixed(0)} MiB) + 50,000 in node_modules in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function load(root) {
  const { build } = await import(pathToFileURL(join(HERE, '../node_modules/esbuild/lib/main.js')).href);
  const out = join(mkdtempSync(join(tmpdir(), 'deskrelay-agent-bundle-')), 'workspace.mjs');
  await build({ entryPoints: [join(root, 'server/src/agent/hosts/node/index.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: out, logLevel: 'silent', nodePaths: [join(HERE, '../node_modules')] });
  const { NodeWorkspace } = await import(pathToFileURL(out).href);
  return new NodeWorkspace({ folder: TREE, configDir: join(tmpdir(), 'deskrelay-agent-bench-config-none') });
}

/**
 * Runs `fn`, sampling RSS and heap every 10 ms: wall time and the peaks above the start, and the
 * longest the event loop was held meanwhile (the gap between two 5 ms ticks, less the 5 ms): what
 * every other stream of the relay waits while the tool runs.
 */
async function measure(fn) {
  globalThis.gc?.();
  const m0 = process.memoryUsage();
  let rss = m0.rss;
  let heap = m0.heapUsed;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss);
    heap = Math.max(heap, m.heapUsed);
  }, 10);
  let last = performance.now();
  let stall = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last - 5);
    last = now;
  }, 5);
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const value = await fn().catch((err) => ({ error: err.message }));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu = process.cpuUsage(c0);
  clearInterval(timer);
  clearInterval(ticker);
  stall = Math.max(stall, performance.now() - last - 5);
  const m1 = process.memoryUsage();
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000, stallMs: Math.max(0, stall), value, rssPeakMiB: (Math.max(rss, m1.rss) - m0.rss) / 2 ** 20, heapPeakMiB: (Math.max(heap, m1.heapUsed) - m0.heapUsed) / 2 ** 20 };
}

const CASES = [
  ['search rare string, s1 (12,500 files)', (ws) => ws.search({ query: RARE, path: 's1', regex: false, maxMatches: 200 }), (v) => `${v.matches.length} matches`],
  ['search rare string, s3 (25,000 files)', (ws) => ws.search({ query: RARE, path: 's3', regex: false, maxMatches: 200 }), (v) => `${v.matches.length} matches`],
  ['search rare string, root (50,000 files)', (ws) => ws.search({ query: RARE, path: '', regex: false, maxMatches: 200 }), (v) => `${v.matches.length} matches: ${v.matches.map((m) => m.path).join(', ')}`],
  ['search regex, root (50,000 files)', (ws) => ws.search({ query: 'zq_rare_n[e]+dle_\\d+', path: '', regex: true, maxMatches: 200 }), (v) => `${v.matches.length} matches`],
  ['search common string, root (cap 200)', (ws) => ws.search({ query: 'return', path: '', regex: false, maxMatches: 200 }), (v) => `${v.matches.length} matches, truncated ${v.truncated}`],
  ['list_files root (cap 2000)', (ws) => ws.listFiles({ path: '', maxEntries: 2000 }), (v) => `${v.files.length} files, truncated ${v.truncated}`],
  ['list_files root, pattern **/file17.ts (200 files)', (ws) => ws.listFiles({ path: '', pattern: '**/file17.ts', maxEntries: 2000 }), (v) => `${v.files.length} files, truncated ${v.truncated}`],
  ['read_file (4 KiB)', (ws) => ws.readFile('s2/m0/pkg0/file10.ts'), (v) => `${v.length} chars`],
];

generate();
const hosts = [];
for (const root of roots) hosts.push({ root, ws: await load(root) });
const rows = Object.fromEntries(hosts.map((h) => [h.root, Object.fromEntries(CASES.map(([name]) => [name, []]))]));
// Warm-up: the page cache by one pass of the last root (the fastest, usually this tree), the JIT
// of every root on the cheap cases; then the measured rounds, roots alternating.
for (const [, fn] of CASES) await fn(hosts[hosts.length - 1].ws).catch(() => {});
for (const h of hosts) for (const [name, fn] of CASES) if (!name.startsWith('search')) await fn(h.ws).catch(() => {});
for (let r = 0; r < R; r++) {
  for (const h of hosts) {
    for (const [name, fn, show] of CASES) {
      const m = await measure(() => fn(h.ws));
      rows[h.root][name].push(m);
      if (r === 0) log(`${h.root}: ${name}: ${m.ms.toFixed(1)} ms (CPU ${m.cpuMs.toFixed(0)} ms, loop held ≤ ${m.stallMs.toFixed(0)} ms), RSS +${m.rssPeakMiB.toFixed(1)} MiB, heap +${m.heapPeakMiB.toFixed(1)} MiB (${m.value.error ? `failed: ${m.value.error}` : show(m.value)})`);
    }
  }
}
console.log(`\nmedians over ${R} rounds (wall ms, this process's CPU ms, which includes libuv's pool and worker threads; the longest the event loop was held; peak RSS / heap above the start, MiB):`);
for (const h of hosts) {
  console.log(`  ${h.root}`);
  for (const [name] of CASES) {
    const xs = rows[h.root][name];
    console.log(`    ${name.padEnd(44)} ${median(xs.map((x) => x.ms)).toFixed(1).padStart(8)} ms  CPU ${median(xs.map((x) => x.cpuMs)).toFixed(0).padStart(6)} ms  held ${median(xs.map((x) => x.stallMs)).toFixed(0).padStart(4)} ms   RSS +${median(xs.map((x) => x.rssPeakMiB)).toFixed(1)}   heap +${median(xs.map((x) => x.heapPeakMiB)).toFixed(1)}`);
  }
}
