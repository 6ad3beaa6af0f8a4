#!/usr/bin/env node
// Top self-time functions of a .cpuprofile (node --cpu-prof), and self time by category.
//   node bench/cpuprofile-top.mjs FILE.cpuprofile [N] [SKIP_MS]
// SKIP_MS: leave out the samples of the profile's first SKIP_MS ms (start-up, warm-up).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function summarize(file, n = 30, skipMs = 0) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((x) => [x.id, x]));
  const self = new Map();
  let at = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    at += prof.timeDeltas[i] ?? 0;
    if (at < skipMs * 1000) continue;
    const id = prof.samples[i];
    self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i + 1] ?? 0));
  }
  const fns = new Map();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const { callFrame: f } = byId.get(id);
    if (f.functionName === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const where = f.url ? `${f.url.replace(/^.*\/(node_modules\/|dist\/|node:)/, '$1')}:${f.lineNumber + 1}` : '';
    const key = `${f.functionName || '(anonymous)'} ${where}`.trim();
    fns.set(key, (fns.get(key) ?? 0) + us);
  }
  const cat = new Map();
  for (const [key, us] of fns) {
    const c = key.startsWith('(garbage collector)')
      ? 'GC'
      : key.startsWith('(program)')
        ? '(program): native, outside JS'
        : /node_modules\/undici|undici/.test(key)
          ? 'undici'
          : /dist\/cli\.js/.test(key)
            ? 'relay code (dist/cli.js)'
            : /node:|internal\//.test(key)
              ? 'Node internals (http, streams, net)'
              : key.includes(' ')
                ? 'other'
                : 'native builtins (no URL)';
    cat.set(c, (cat.get(c) ?? 0) + us);
  }
  const pct = (us) => `${((us / total) * 100).toFixed(1).padStart(5)}%`;
  const L = [`busy ${(total / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s`, '', 'self time by category:'];
  for (const [c, us] of [...cat].sort((a, b) => b[1] - a[1])) L.push(`  ${pct(us)}  ${(us / 1e3).toFixed(0).padStart(7)} ms  ${c}`);
  L.push('', `top ${n} functions by self time:`);
  for (const [key, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, n)) L.push(`  ${pct(us)}  ${(us / 1e3).toFixed(0).padStart(7)} ms  ${key}`);
  return L.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(summarize(process.argv[2], Number(process.argv[3] ?? 30), Number(process.argv[4] ?? 0)));
}
