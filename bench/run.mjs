#!/usr/bin/env node
// `npm run bench`: the relay against the floor. In one run, on one stand-in provider (bench/standin.mjs),
// the same client streams (1) straight from the provider, (2) through nginx with proxy_buffering off,
// (3) through the relay (`dist/cli.js serve`, the product), and writes bench/RESULTS.md and
// bench/results.json. BENCH_QUICK=1 shrinks every phase (a smoke run; its figures mean little).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { cpus, release, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  childrenOf,
  cpuSeconds,
  median,
  ms,
  nowNs,
  percentile,
  pool,
  rounds,
  rssBytes,
  runStream,
  sleep,
  spawnReady,
  stopProcess,
} from './lib.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const QUICK = process.env.BENCH_QUICK === '1';
const q = (full, quick) => (QUICK ? quick : full);
const log = (m) => process.stdout.write(`[bench] ${m}\n`);
const work = mkdtempSync(join(tmpdir(), 'deskrelay-bench-'));
const cleanups = [];
const results = { quick: QUICK, startedAt: new Date().toISOString() };

async function main() {
  const started = Date.now();
  results.machine = machine();
  log(`machine: ${results.machine.cpu}, ${results.machine.cores} cores, ${results.machine.memGiB} GiB, Node ${process.version}`);

  log('building dist/ (npm run build)');
  execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'inherit' });

  const nginxBin = ensureNginx();
  results.machine.nginx = execFileSync(nginxBin, ['-v'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim() || spawnSync(nginxBin, ['-v'], { encoding: 'utf8' }).stderr.trim();

  // The stand-in provider, the relay, nginx: three processes beside this client.
  const standin = await spawnReady(process.execPath, [join(ROOT, 'bench/standin.mjs')], { ready: (o) => (o.includes('\n') ? JSON.parse(o.split('\n')[0]).port : undefined) });
  cleanups.push(() => stopProcess(standin.child));
  const providerPort = standin.value;
  log(`stand-in provider on 127.0.0.1:${providerPort}`);

  const nginx = await startNginx(nginxBin, providerPort);
  cleanups.push(() => stopProcess(nginx.child, 'SIGQUIT'));
  log(`nginx on 127.0.0.1:${nginx.port} (master ${nginx.child.pid}, workers ${childrenOf(nginx.child.pid).join(',')})`);

  let relay = await startRelay(providerPort);
  cleanups.push(() => stopProcess(relay.child));
  log(`relay on ${relay.url} (pid ${relay.child.pid})`);

  const providerBody = (plan) => JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: JSON.stringify(plan) }], stream: true });
  const targets = [
    { name: 'direct', port: providerPort, path: '/api/chat', headers: { 'content-type': 'application/json' }, body: providerBody, pids: () => [] },
    { name: 'nginx', port: nginx.port, path: '/api/chat', headers: { 'content-type': 'application/json' }, body: providerBody, pids: () => [nginx.child.pid, ...childrenOf(nginx.child.pid)] },
    {
      name: 'relay',
      port: relay.port,
      path: '/v1/chat/stream',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${relay.token}` },
      body: (plan) => JSON.stringify({ messages: [{ role: 'user', content: JSON.stringify(plan) }] }),
      pids: () => [relay.child.pid],
    },
  ];
  const cpuOf = (pids) => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });

  for (const t of targets) await rounds(10, 40, () => runStream(t, { n: 5, interval: 0 }, agent));

  // A. Time to first token when N requests arrive at the same instant (a thundering herd: the harshest case).
  results.ttftBurst = {};
  for (const c of [1, 10, 100]) {
    results.ttftBurst[c] = {};
    const total = q({ 1: 300, 10: 600, 100: 1000 }[c], { 1: 30, 10: 60, 100: 200 }[c]);
    for (const t of targets) {
      const rs = await rounds(c, total, () => runStream(t, { n: 1 }, agent));
      const v = rs.map((r) => ms(Number(r.first - r.t0)));
      results.ttftBurst[c][t.name] = { p50: percentile(v, 50), p99: percentile(v, 99), n: v.length };
    }
    log(`TTFT burst of ${c}: ${fmtTriple(results.ttftBurst[c])}`);
  }

  // B. N streams in flight at a model's pace (100 tokens/s each), starts spread evenly: each new
  //    stream's time to first token, and every token event's latency. At N = 1 the TTFT samples
  //    are the burst-of-1 ones (the same thing, more samples).
  results.ttft = { 1: results.ttftBurst[1] };
  results.perToken = {};
  results.cpuPaced = {};
  for (const c of [1, 10, 100]) {
    results.perToken[c] = {};
    if (c !== 1) results.ttft[c] = {};
    const streams = q({ 1: 10, 10: 60, 100: 400 }[c], { 1: 3, 10: 20, 100: 100 }[c]);
    const plan = { n: q(50, 20), interval: 10 };
    const streamMs = plan.n * plan.interval;
    for (const t of targets) {
      const cpu0 = cpuOf(t.pids());
      const rs = await pool(c, streams, async (i) => {
        if (i < c) await sleep((i * streamMs) / c);
        return runStream(t, plan, agent, { latencies: true });
      });
      const cpu = cpuOf(t.pids()) - cpu0;
      const lat = rs.flatMap((r) => r.lat).map(ms);
      const tokens = rs.reduce((s, r) => s + r.tokens, 0);
      if (rs.some((r) => r.terminal !== 'done' || r.tokens !== plan.n)) throw new Error(`${t.name}: a paced stream did not complete`);
      results.perToken[c][t.name] = { p50: percentile(lat, 50), p99: percentile(lat, 99), n: lat.length };
      if (c !== 1) {
        // The first `c` streams start while fewer than c are in flight; count the rest.
        const v = rs.slice(c).map((r) => ms(Number(r.first - r.t0)));
        results.ttft[c][t.name] = { p50: percentile(v, 50), p99: percentile(v, 99), n: v.length };
      }
      if (c === 100) results.cpuPaced[t.name] = { cpuSeconds: cpu, tokens, perMillion: (cpu / tokens) * 1e6 };
    }
    if (c !== 1) log(`TTFT with ${c} in flight: ${fmtTriple(results.ttft[c])}`);
    log(`per-token c=${c}: ${fmtTriple(results.perToken[c])}`);
  }

  // C. The most token events per second: one stream, and 100 streams together, as fast as they go.
  results.throughput = {};
  for (const t of targets) {
    const one = await runStream(t, { n: q(200_000, 20_000), interval: 0 }, agent);
    const oneRate = one.tokens / (Number(one.last - one.first) / 1e9);
    const n = q(10_000, 1_000);
    const cpu0 = cpuOf(t.pids());
    const p0 = cpuSeconds(standin.child.pid);
    const t0 = nowNs();
    const all = await rounds(100, 100, () => runStream(t, { n, interval: 0 }, agent));
    const wall = Number(nowNs() - t0) / 1e9;
    const cpu = cpuOf(t.pids()) - cpu0;
    const tokens = all.reduce((s, r) => s + r.tokens, 0);
    if (all.some((r) => r.terminal !== 'done' || r.tokens !== n)) throw new Error(`${t.name}: a throughput stream did not complete`);
    results.throughput[t.name] = {
      oneStream: oneRate,
      allStreams: tokens / wall,
      tokens,
      cpuSeconds: cpu,
      cpuPerMillion: (cpu / tokens) * 1e6,
      providerCpuPerMillion: ((cpuSeconds(standin.child.pid) - p0) / tokens) * 1e6,
    };
    log(`throughput ${t.name}: one stream ${Math.round(oneRate)}/s, 100 streams ${Math.round(tokens / wall)}/s, CPU ${((cpu / tokens) * 1e6).toFixed(2)} s per million`);
  }
  agent.destroy();

  // D. Memory per open idle stream: 1000 streams open at once, each silent after its first token,
  //    held past the 15 s keep-alive so every stream's keep-alive timer has fired. Fresh relay.
  await stopProcess(relay.child);
  relay = await startRelay(providerPort);
  targets[2].port = relay.port;
  targets[2].headers.authorization = `Bearer ${relay.token}`;
  results.idle = {};
  for (const t of [targets[2], targets[1]]) {
    const holdMs = t.name === 'relay' ? q(17_000, 16_000) : 5_000;
    const count = q(1000, 300);
    const idleAgent = new Agent({ keepAlive: true, maxSockets: Infinity });
    await rounds(20, 40, () => runStream(t, { n: 3 }, idleAgent));
    await sleep(1_000);
    const pids = t.name === 'relay' ? [relay.child.pid] : childrenOf(nginx.child.pid);
    const rss0 = pids.reduce((s, p) => s + rssBytes(p), 0);
    let held = 0;
    const opened = nowNs();
    const streams = Array.from({ length: count }, () => runStream(t, { n: 2, hold: holdMs }, idleAgent, { onFirst: () => held++ }));
    while (held < count && Number(nowNs() - opened) / 1e6 < holdMs - 1_000) await sleep(50);
    const allOpenAfterMs = Number(nowNs() - opened) / 1e6;
    // Wait until the keep-alives are due (15 s after each stream's last write), then read memory.
    const readAt = t.name === 'relay' ? Math.min(holdMs - 500, 15_800) : holdMs - 1_500;
    while (Number(nowNs() - opened) / 1e6 < readAt) await sleep(100);
    const rss1 = pids.reduce((s, p) => s + rssBytes(p), 0);
    const rs = await Promise.all(streams);
    idleAgent.destroy();
    const done = rs.filter((r) => r.terminal === 'done' && r.tokens === 2).length;
    const keepAlives = rs.reduce((s, r) => s + r.keepAlives, 0);
    results.idle[t.name] = { count, heldAtOnce: held, allOpenAfterMs, completed: done, keepAlives, rssBefore: rss0, rssWith: rss1, perStreamKiB: (rss1 - rss0) / count / 1024 };
    log(`idle ${t.name}: ${held}/${count} open at once, ${done} completed, ${keepAlives} keep-alives, ${((rss1 - rss0) / count / 1024).toFixed(1)} KiB RSS per stream`);
  }

  // E. Start-up: the CLI from spawn to listening; the extension's require + activate() (stubbed vscode API).
  results.startup = await startup(providerPort);
  log(`start-up: CLI listening after ${results.startup.cliListeningMs.toFixed(0)} ms (node itself ${results.startup.nodeBootMs.toFixed(0)} ms); extension activate ${results.startup.activation?.activateMs?.toFixed(1) ?? 'n/a'} ms`);

  results.durationS = (Date.now() - started) / 1000;
  writeFileSync(join(ROOT, 'bench/results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(ROOT, 'bench/RESULTS.md'), report(results));
  log(`wrote bench/RESULTS.md and bench/results.json in ${results.durationS.toFixed(0)} s`);
}

function machine() {
  const cpu = cpus()[0]?.model?.trim() ?? 'unknown CPU';
  let distro = '';
  try {
    distro = /PRETTY_NAME="([^"]+)"/.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? '';
  } catch {}
  return { cpu, cores: cpus().length, memGiB: Math.round(totalmem() / 2 ** 30), kernel: release(), distro, node: process.version };
}

function ensureNginx() {
  const find = () => ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'].find((p) => existsSync(p));
  let bin = find();
  if (bin) return bin;
  log("nginx is missing: installing Debian's nginx with apt-get (apt-get update && apt-get install -y nginx)");
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  const run = (args) => execFileSync(sudo.length ? 'sudo' : args[0], sudo.length ? args : args.slice(1), { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  run(['apt-get', 'update']);
  run(['apt-get', 'install', '-y', 'nginx']);
  bin = find();
  if (!bin) throw new Error('nginx could not be installed');
  // The package may have started the system nginx on port 80; this benchmark runs its own instance and leaves that one alone.
  return bin;
}

async function startNginx(bin, upstreamPort) {
  const dir = join(work, 'nginx');
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const port = await freePort();
  const conf = `
worker_processes 1;
worker_rlimit_nofile 20000;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream standin { server 127.0.0.1:${upstreamPort}; keepalive 512; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://standin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const { spawn } = await import('node:child_process');
  const child = spawn(bin, ['-e', join(dir, 'logs/error.log'), '-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['pipe', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; i++) {
    if (await canConnect(port)) return { child, port };
    await sleep(50);
  }
  throw new Error(`nginx did not listen on ${port}; see ${dir}/logs/error.log`);
}

async function startRelay(providerPort) {
  const dir = mkdtempSync(join(work, 'relay-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({ activeProvider: 'bench', maxConcurrentStreams: 1500, providers: [{ id: 'bench', kind: 'ollama', baseUrl: `http://127.0.0.1:${providerPort}`, model: 'bench' }] }),
  );
  const { child, value } = await spawnReady(process.execPath, [join(ROOT, 'dist/cli.js'), 'serve', '--port', '0', '--config', config], {
    env: { DESKRELAY_CONFIG_DIR: dir },
    ready: (o) => {
      const url = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(o);
      const token = /"token":"(dr_[A-Za-z0-9_-]+)"/.exec(o);
      return url && token ? { url: url[1], port: Number(url[2]), token: token[1] } : undefined;
    },
  });
  return { child, ...value };
}

async function freePort() {
  const { createServer } = await import('node:net');
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

async function canConnect(port) {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

async function startup(providerPort) {
  const runs = q(10, 3);
  const boot = [];
  for (let i = 0; i < runs; i++) {
    const t0 = nowNs();
    const { child } = await spawnReady(process.execPath, ['-e', 'process.stdout.write("up\\n"); process.stdin.resume()'], { ready: (o) => (o.includes('up') ? true : undefined) });
    boot.push(Number(nowNs() - t0) / 1e6);
    await stopProcess(child);
  }
  const listening = [];
  for (let i = 0; i < runs; i++) {
    const t0 = nowNs();
    const relay = await startRelay(providerPort);
    listening.push(Number(nowNs() - t0) / 1e6);
    await stopProcess(relay.child);
  }
  let activation;
  try {
    const samples = [];
    for (let i = 0; i < runs; i++) {
      const out = execFileSync(process.execPath, [join(ROOT, 'bench/activation.cjs')], { cwd: ROOT, encoding: 'utf8', timeout: 20_000, env: { ...process.env, DESKRELAY_CONFIG_DIR: mkdtempSync(join(work, 'act-')) } });
      samples.push(JSON.parse(out.trim().split('\n').pop()));
    }
    activation = { requireMs: median(samples.map((s) => s.requireMs)), activateMs: median(samples.map((s) => s.activateMs)), commands: samples[0].commands };
  } catch (err) {
    activation = { error: String(err.message ?? err).split('\n')[0] };
  }
  return { nodeBootMs: median(boot), cliListeningMs: median(listening), cliListeningMinMs: Math.min(...listening), activation };
}

const f1 = (x) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : 'n/a');
const fmtTriple = (o) => ['direct', 'nginx', 'relay'].map((n) => `${n} p50 ${f1(o[n].p50)} / p99 ${f1(o[n].p99)} ms`).join('; ');
const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a');

function report(r) {
  const m = r.machine;
  const L = [];
  L.push('# DeskRelay benchmark results', '');
  L.push(`Written by \`npm run bench\` (bench/run.mjs) on ${r.startedAt.slice(0, 10)}${r.quick ? ' — **QUICK smoke run: small samples, figures indicative only**' : ''}; the run took ${r.durationS.toFixed(0)} s. Raw figures: \`bench/results.json\`.`, '');
  L.push(`**Machine:** ${m.cpu}, ${m.cores} cores, ${m.memGiB} GiB RAM, ${m.distro}, Linux ${m.kernel}, Node ${m.node}, ${m.nginx}.`, '');
  L.push('**Set-up.** One stand-in provider (`bench/standin.mjs`, Ollama NDJSON; each token carries its send time), one client (this process, node:http keep-alive agent, real HTTP on loopback), three paths to the same provider: **direct**; **nginx** (Debian\'s, 1 worker, `proxy_buffering off`, HTTP/1.1 upstream keep-alive) — the floor of what any streaming proxy costs; **relay** — `dist/cli.js serve`, the shipped CLI, provider kind `ollama`, its request log on. Each process is separate; all share the 2 cores. "Added" = relay (or nginx) minus direct at the same percentile.', '');

  const tri = (title, data, unit) => {
    L.push(`### ${title}`, '');
    L.push('| streams at once | direct p50 / p99 | nginx p50 / p99 | relay p50 / p99 | relay added p50 / p99 | nginx added p50 / p99 | relay ÷ direct (p50) | relay ÷ nginx (p50) |');
    L.push('|---|---|---|---|---|---|---|---|');
    for (const c of ['1', '10', '100']) {
      const d = data[c];
      L.push(
        `| ${c} | ${f1(d.direct.p50)} / ${f1(d.direct.p99)} ${unit} | ${f1(d.nginx.p50)} / ${f1(d.nginx.p99)} | ${f1(d.relay.p50)} / ${f1(d.relay.p99)} | ` +
          `**${f1(d.relay.p50 - d.direct.p50)} / ${f1(d.relay.p99 - d.direct.p99)}** | ${f1(d.nginx.p50 - d.direct.p50)} / ${f1(d.nginx.p99 - d.direct.p99)} | ` +
          `${ratio(d.relay.p50, d.direct.p50)} | ${ratio(d.relay.p50, d.nginx.p50)} |`,
      );
    }
    L.push('');
  };
  tri('Time to first token with N streams in flight (ms; request written → first token read)', r.ttft, 'ms');
  L.push(`Samples per cell: ${r.ttft['1'].relay.n} / ${r.ttft['10'].relay.n} / ${r.ttft['100'].relay.n}. N = 1: one stream at a time. N = 10, 100: N workers each running paced streams back to back, starts spread evenly, so every new stream starts while the others stream.`, '');
  tri('Time to first token when N requests arrive at the same instant (ms; 1-token replies)', r.ttftBurst, 'ms');
  L.push(`Samples per cell: ${r.ttftBurst['1'].relay.n} / ${r.ttftBurst['10'].relay.n} / ${r.ttftBurst['100'].relay.n}, in rounds of exactly N simultaneous requests: the last of a round waits for the N − 1 before it, so this is the cost of accepting a stream times N.`, '');
  tri('Latency per token event with N streams in flight (ms; provider write → client read; 100 tokens/s per stream)', r.perToken, 'ms');
  L.push(`Samples per cell: ${r.perToken['1'].relay.n} / ${r.perToken['10'].relay.n} / ${r.perToken['100'].relay.n} token events.`, '');

  L.push('### Throughput and CPU', '');
  L.push('| path | one stream, token events/s | 100 streams together, token events/s | CPU s per million token events (flat out) | CPU s per million (100 paced streams) |');
  L.push('|---|---|---|---|---|');
  for (const n of ['direct', 'nginx', 'relay']) {
    const t = r.throughput[n];
    const paced = r.cpuPaced[n];
    L.push(`| ${n} | ${Math.round(t.oneStream).toLocaleString('en')} | ${Math.round(t.allStreams).toLocaleString('en')} | ${n === 'direct' ? '—' : f1(t.cpuPerMillion)} | ${n === 'direct' ? '—' : f1(paced.perMillion)} |`);
  }
  L.push('', `CPU is the proxy's own (relay: the CLI process; nginx: master + worker), from /proc utime+stime. Relay ÷ nginx CPU per token: **${ratio(r.throughput.relay.cpuPerMillion, r.throughput.nginx.cpuPerMillion)}** flat out, ${ratio(r.cpuPaced.relay.perMillion, r.cpuPaced.nginx.perMillion)} paced. The stand-in itself used ${f1(r.throughput.direct.providerCpuPerMillion)} CPU s per million tokens when read directly.`, '');

  L.push('### Idle streams', '');
  L.push('| path | streams open at once | completed | keep-alive comments received | RSS before → with streams | RSS per idle stream |');
  L.push('|---|---|---|---|---|---|');
  for (const n of ['relay', 'nginx']) {
    const i = r.idle[n];
    L.push(`| ${n} | ${i.heldAtOnce} / ${i.count} (all open after ${(i.allOpenAfterMs / 1000).toFixed(1)} s) | ${i.completed} | ${i.keepAlives} | ${(i.rssBefore / 2 ** 20).toFixed(1)} → ${(i.rssWith / 2 ** 20).toFixed(1)} MiB | **${f1(i.perStreamKiB)} KiB** |`);
  }
  L.push('', 'Each stream gets one token, then its provider is silent past the 15 s keep-alive interval (relay; RSS read at ~15.8 s, after the keep-alives fired), then a second token and done. nginx sends no keep-alives; its RSS is the worker\'s.', '');

  L.push('### Start-up', '');
  const s = r.startup;
  L.push(`- Server start to listening (\`node dist/cli.js serve --port 0\`, spawn → "listening" line, median of runs): **${f1(s.cliListeningMs)} ms** (best ${f1(s.cliListeningMinMs)} ms); a bare \`node -e\` spawn → first output on this machine: ${f1(s.nodeBootMs)} ms, so the CLI itself adds ~${f1(s.cliListeningMs - s.nodeBootMs)} ms.`);
  if (s.activation?.error) L.push(`- Extension activation: not measured (${s.activation.error}).`);
  else
    L.push(
      `- Extension activation: \`require('dist/extension.js')\` **${f1(s.activation.requireMs)} ms**, \`activate()\` **${f1(s.activation.activateMs)} ms** (median). Measured in plain Node with a minimal stub of the \`vscode\` API (\`bench/activation.cjs\`; ${s.activation.commands} commands registered), **not inside a real VS Code**: the real extension host adds its own loading around this.`,
    );
  L.push('');

  L.push('## Against the targets', '');
  L.push('| target | measured | met? |');
  L.push('|---|---|---|');
  const pt = r.perToken['100'];
  const tt = r.ttft['100'];
  const addP50 = pt.relay.p50 - pt.direct.p50;
  const addP99 = pt.relay.p99 - pt.direct.p99;
  const addTtft = tt.relay.p50 - tt.direct.p50;
  const cpuRatio = r.throughput.relay.cpuPerMillion / r.throughput.nginx.cpuPerMillion;
  const idle = r.idle.relay;
  const yes = (ok) => (ok ? 'yes' : '**no**');
  L.push(`| ≤ 1 ms p50 added per token at 100 streams | ${f1(addP50)} ms | ${yes(addP50 <= 1)} |`);
  L.push(`| ≤ 5 ms p99 added per token at 100 streams | ${f1(addP99)} ms | ${yes(addP99 <= 5)} |`);
  L.push(`| ≤ 3 ms added to time to first token at 100 streams (p50, 100 in flight) | ${f1(addTtft)} ms (p99 added: ${f1(tt.relay.p99 - tt.direct.p99)} ms; 100 arriving at once: ${f1(r.ttftBurst['100'].relay.p50 - r.ttftBurst['100'].direct.p50)} ms p50) | ${yes(addTtft <= 3)} |`);
  L.push(`| CPU per token within 3× nginx's | ${cpuRatio.toFixed(2)}× (flat out); ${(r.cpuPaced.relay.perMillion / r.cpuPaced.nginx.perMillion).toFixed(2)}× paced | ${yes(cpuRatio <= 3)} |`);
  L.push(`| ≤ 30 KiB RSS per idle stream (1000 open, keep-alives running) | ${f1(idle.perStreamKiB)} KiB | ${yes(idle.perStreamKiB <= 30)} |`);
  L.push(`| 1000 concurrent streams held on this ${m.cores}-core machine | ${idle.heldAtOnce} open at once, ${idle.completed} completed | ${yes(idle.heldAtOnce >= 1000 && idle.completed >= 1000)} |`);
  L.push('');
  L.push(...notes());
  return `${L.join('\n')}\n`;
}

/** Hand-written findings (profiles, fixes) that go under the generated tables. */
function notes() {
  const file = join(ROOT, 'bench/NOTES.md');
  return existsSync(file) ? ['## Notes', '', readFileSync(file, 'utf8').trim(), ''] : [];
}

const USAGE = `Usage: node bench/run.mjs [--report-only]
  (no flag)      run every benchmark (~2 min) and write bench/RESULTS.md and bench/results.json
  --report-only  rewrite bench/RESULTS.md from bench/results.json and bench/NOTES.md
`;
const args = process.argv.slice(2);
if (args.some((a) => a !== '--report-only')) {
  // Never start a two-minute run that overwrites the results because of a typo.
  process.stdout.write(USAGE);
  rmSync(work, { recursive: true, force: true });
  process.exit(args.includes('--help') || args.includes('-h') ? 0 : 2);
}

// `node bench/run.mjs --report-only`: rewrite RESULTS.md from results.json (after editing NOTES.md).
const run = args.includes('--report-only')
  ? async () => {
      Object.assign(results, JSON.parse(readFileSync(join(ROOT, 'bench/results.json'), 'utf8')));
      writeFileSync(join(ROOT, 'bench/RESULTS.md'), report(results));
      log('rewrote bench/RESULTS.md from bench/results.json');
    }
  : main;

run()
  .catch((err) => {
    process.stderr.write(`[bench] failed: ${err.stack ?? err}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  });
