#!/usr/bin/env node
// Flat-out A/B: one stream of N tokens as fast as the stand-in can write them, through each relay
// build given, alternating; relay CPU s per million tokens from /proc.
//   node bench/flat.mjs [--tokens 200000] [--rounds 3] DIR_A DIR_B ...
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, median, runStream, spawnReady, stopProcess } from './lib.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : dflt);
const N = opt('tokens', 200_000);
const R = opt('rounds', 3);
const dirs = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--')).map((d) => resolve(d));

const standin = await spawnReady(process.execPath, [join(HERE, 'standin.mjs')], { ready: (o) => (o.includes('\n') ? JSON.parse(o.split('\n')[0]).port : undefined) });
const relays = [];
for (const root of dirs) {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-flat-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ activeProvider: 'bench', providers: [{ id: 'bench', kind: 'ollama', baseUrl: `http://127.0.0.1:${standin.value}`, model: 'bench' }] }));
  const r = await spawnReady(process.execPath, [join(root, 'dist/cli.js'), 'serve', '--port', '0', '--config', config], {
    env: { DESKRELAY_CONFIG_DIR: dir },
    ready: (o) => {
      const m = /"url":"(http:[^"]+)","token":"([^"]+)"/.exec(o);
      return m ? { url: m[1], token: m[2] } : undefined;
    },
  });
  const port = Number(new URL(r.value.url).port);
  relays.push({
    root,
    child: r.child,
    target: {
      port,
      path: '/v1/chat/stream',
      headers: { authorization: `Bearer ${r.value.token}`, 'content-type': 'application/json' },
      body: (plan) => JSON.stringify({ messages: [{ role: 'user', content: JSON.stringify(plan) }] }),
    },
    cpu: [],
  });
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
