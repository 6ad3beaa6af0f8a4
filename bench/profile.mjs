#!/usr/bin/env node
// A CPU profile of the relay CLI under the bench's load (issue 10's "profile, fix" step).
//
//   node bench/profile.mjs [--root DIR] [--floor] [--phase paced|burst|both] [--out DIR] [--top N] [--interval US]
//
// Starts the stand-in provider and `node --cpu-prof DIR/dist/cli.js serve` (DIR: this tree, or a
// baseline worktree), drives it like bench/run.mjs does, stops it (SIGTERM, so the profile is
// written), then prints the top self-time functions and the time by category. Phases:
//   paced  100 concurrent paced streams (50 tokens, 10 ms apart), 800 streams back to back
//   burst  rounds of 100 one-token replies arriving at the same instant, 2,000 streams
// --floor profiles the Node floor (bench/floor.mjs) under the same load instead of the relay, to
// compare function by function. The .cpuprofile stays in --out (default a temp dir) for a closer look (Chrome DevTools).
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, pool, rounds, runStream, sleep, spawnReady, stopProcess } from './lib.mjs';
import { summarize } from './cpuprofile-top.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? dflt : args[i + 1];
};
const root = resolve(flag('root', ROOT));
const phase = flag('phase', 'both');
const out = resolve(flag('out', mkdtempSync(join(tmpdir(), 'deskrelay-prof-'))));
const top = Number(flag('top', 30));
// V8 samples every 1,000 µs by default: about 1,000 samples for the burst phase, too few to rank functions of 1–2%.
const profArgs = ['--cpu-prof', '--cpu-prof-dir', out, ...(flag('interval') ? ['--cpu-prof-interval', flag('interval')] : [])];

const standin = await spawnReady(process.execPath, [join(ROOT, 'bench/standin.mjs')], { ready: (o) => (o.includes('\n') ? JSON.parse(o.split('\n')[0]).port : undefined) });
const dir = mkdtempSync(join(tmpdir(), 'deskrelay-prof-cfg-'));
const config = join(dir, 'config.json');
writeFileSync(config, JSON.stringify({ activeProvider: 'bench', maxConcurrentStreams: 1500, providers: [{ id: 'bench', kind: 'ollama', baseUrl: `http://127.0.0.1:${standin.value}`, model: 'bench' }] }));
const spawnedAt = Date.now();
const FLOOR = args.includes('--floor');
const floorToken = 'dr_profilefloor';
const relay = FLOOR
  ? await spawnReady(process.execPath, [...profArgs, join(ROOT, 'bench/floor.mjs'), '--provider', `http://127.0.0.1:${standin.value}`, '--token', floorToken], {
      ready: (o) => (o.includes('\n') ? { port: JSON.parse(o.split('\n')[0]).port, token: floorToken } : undefined),
    })
  : await spawnReady(process.execPath, [...profArgs, join(root, 'dist/cli.js'), 'serve', '--port', '0', '--config', config], {
      env: { DESKRELAY_CONFIG_DIR: dir },
      ready: (o) => {
        const url = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(o);
        const token = /"token":"(dr_[A-Za-z0-9_-]+)"/.exec(o);
        return url && token ? { port: Number(url[2]), token: token[1] } : undefined;
      },
    });
const target = {
  name: 'relay',
  port: relay.value.port,
  path: '/v1/chat/stream',
  headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${relay.value.token}` },
  body: (plan) => JSON.stringify({ messages: [{ role: 'user', content: JSON.stringify(plan) }] }),
};
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
await rounds(10, 100, () => runStream(target, { n: 5 }, agent));
// The summary leaves out start-up and this warm-up (the .cpuprofile keeps everything).
await rounds(100, 500, () => runStream(target, { n: 1 }, agent));
const skipMs = Date.now() - spawnedAt;
const cpu0 = cpuSeconds(relay.child.pid);
let streams = 0;
let tokens = 0;
if (phase === 'paced' || phase === 'both') {
  const plan = { n: 50, interval: 10 };
  const rs = await pool(100, 800, async (i) => {
    if (i < 100) await sleep(i * 5);
    return runStream(target, plan, agent);
  });
  streams += rs.length;
  tokens += rs.reduce((s, r) => s + r.tokens, 0);
}
if (phase === 'burst' || phase === 'both') {
  const rs = await rounds(100, 2000, () => runStream(target, { n: 1 }, agent));
  streams += rs.length;
  tokens += rs.reduce((s, r) => s + r.tokens, 0);
}
const cpu = cpuSeconds(relay.child.pid) - cpu0;
agent.destroy();
await stopProcess(relay.child);
await stopProcess(standin.child);
const file = readdirSync(out).filter((f) => f.endsWith('.cpuprofile')).sort().pop();
console.log(`${FLOOR ? 'node floor' : `relay ${root}`} phase ${phase}: ${streams} streams, ${tokens} tokens, relay CPU ${cpu.toFixed(2)} s (${((cpu / streams) * 1000).toFixed(2)} ms per stream)`);
console.log(`profile: ${join(out, file)}`);
console.log(`summary of the measured phase only (samples after ${skipMs} ms):`);
console.log(summarize(join(out, file), top, skipMs));
