// Helpers for bench/run.mjs: processes, /proc readings, the streaming client, statistics.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'node:http';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const nowNs = () => process.hrtime.bigint();

let ticksPerSecond;
export function clockTicks() {
  if (!ticksPerSecond) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / clockTicks();
}

export function rssBytes(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** Direct children of a process (nginx's workers). */
export function childrenOf(pid) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const s = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      if (Number(f[1]) === pid) out.push(Number(name));
    } catch {}
  }
  return out;
}

/** Spawns a process and resolves with it once `ready(stdoutSoFar)` returns a value. */
export function spawnReady(cmd, args, { ready, env, timeoutMs = 15_000, stderr = 'ignore' } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', stderr], env: { ...process.env, ...env } });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not get ready within ${timeoutMs} ms; it said: ${out.slice(-500)}`));
    }, timeoutMs);
    child.stdout.setEncoding('utf8');
    const onData = (d) => {
      out += d;
      const value = ready(out);
      if (value !== undefined) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve({ child, value });
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited (${code ?? signal}) before it was ready: ${out.slice(-500)}`));
    });
  });
}

export async function stopProcess(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.stdin?.end();
  child.kill(signal);
  const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(killer);
}

const STAMP = /"(\d+):(\d+) "/;

/**
 * One stream to a target ({ name, port, path, headers, body(plan) }) over real HTTP. Counts token
 * lines (NDJSON from the provider or nginx, SSE from the relay) by their stamp; with `latencies`
 * it records each token's arrival minus its send stamp, in ns.
 */
export function runStream(target, plan, agent, { latencies = false, onFirst } = {}) {
  return new Promise((resolve, reject) => {
    const body = target.body(plan);
    const r = { t0: 0n, first: 0n, last: 0n, tokens: 0, keepAlives: 0, terminal: undefined, lat: latencies ? [] : undefined };
    const req = request(
      { host: '127.0.0.1', port: target.port, path: target.path, method: 'POST', agent, headers: { ...target.headers, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`${target.name}: HTTP ${res.statusCode}`));
        }
        res.setEncoding('utf8');
        let rest = '';
        res.on('data', (d) => {
          const at = nowNs();
          const lines = (rest + d).split('\n');
          rest = lines.pop();
          for (const l of lines) {
            if (l === '') continue;
            if (l === ': ') {
              r.keepAlives++;
              continue;
            }
            if (l.includes('"type":"done"') || l.includes('"done":true')) {
              r.terminal = 'done';
              continue;
            }
            if (l.includes('"type":"error"')) {
              r.terminal = 'error';
              continue;
            }
            const m = STAMP.exec(l);
            if (!m) continue;
            r.tokens++;
            if (r.first === 0n) {
              r.first = at;
              onFirst?.();
            }
            r.last = at;
            if (r.lat) r.lat.push(Number(at - BigInt(m[2])));
          }
        });
        res.on('end', () => resolve(r));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    r.t0 = nowNs();
    req.end(body);
  });
}

/** Runs `total` jobs with `concurrency` workers; each job gets its index. */
export async function pool(concurrency, total, job) {
  let next = 0;
  const results = new Array(total);
  const worker = async () => {
    while (next < total) {
      const i = next++;
      results[i] = await job(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return results;
}

/** Rounds of exactly `concurrency` simultaneous streams (so "100 concurrent" means 100 at once). */
export async function rounds(concurrency, total, job) {
  const out = [];
  for (let i = 0; i < total; i += concurrency) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(concurrency, total - i) }, (_, k) => job(i + k)))));
  }
  return out;
}

export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

export const median = (xs) => percentile(xs, 50);
export const ms = (ns) => ns / 1e6;

/** The nginx binary, installed from Debian's package when missing. */
export function ensureNginx(log = () => {}) {
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

/** nginx as a plain streaming reverse proxy to the stand-in (proxy_buffering off), one worker. */
export async function startNginx(bin, upstreamPort, dir) {
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
  const child = spawn(bin, ['-e', join(dir, 'logs/error.log'), '-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['pipe', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; i++) {
    if (await canConnect(port)) return { child, port };
    await sleep(50);
  }
  throw new Error(`nginx did not listen on ${port}; see ${dir}/logs/error.log`);
}

export async function freePort() {
  const { createServer } = await import('node:net');
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

export async function canConnect(port) {
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


/**
 * The Node floor (bench/floor.mjs) in front of the stand-in: as a target for runStream, with the
 * relay's path, headers and body, and its process.
 */
export async function startFloor(providerPort) {
  const token = `dr_floor${Math.random().toString(36).slice(2)}`;
  const r = await spawnReady(process.execPath, [fileURLToPath(new URL('floor.mjs', import.meta.url)), '--provider', `http://127.0.0.1:${providerPort}`, '--token', token], {
    ready: (o) => (o.includes('\n') ? JSON.parse(o.split('\n')[0]).port : undefined),
  });
  return {
    child: r.child,
    name: 'node floor',
    port: r.value,
    path: '/v1/chat/stream',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: (plan) => JSON.stringify({ messages: [{ role: 'user', content: JSON.stringify(plan) }] }),
    pids: () => [r.child.pid],
  };
}

/**
 * A bench's command line: `option(name, default)` reads `--name N`; `dirs` are the relay builds
 * named (each holds dist/cli.js), resolved; `flag(name)` is a bare `--name`.
 */
export function benchArgs(argv = process.argv.slice(2)) {
  const option = (name, fallback) => (argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : fallback);
  const flag = (name) => argv.includes(`--${name}`);
  // A number after an option is its value; anything else not an option is a build.
  const dirs = argv.filter((a, i) => !a.startsWith('--') && !(argv[i - 1]?.startsWith('--') && /^\d+$/.test(a))).map((d) => resolve(d));
  return { option, flag, dirs };
}

/** The stand-in provider (bench/standin.mjs); `value` is its port. */
export function startStandin() {
  return spawnReady(process.execPath, [fileURLToPath(new URL('standin.mjs', import.meta.url))], { ready: (o) => (o.includes('\n') ? JSON.parse(o.split('\n')[0]).port : undefined) });
}

/**
 * A relay build's `deskrelay serve` (ROOT/dist/cli.js) in front of the stand-in, with a config of
 * its own (up to 1,500 streams at once): as a target for runStream, and its process.
 */
export async function startRelayCli(root, providerPort) {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-bench-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ activeProvider: 'bench', maxConcurrentStreams: 1500, maxConnections: 1500, providers: [{ id: 'bench', kind: 'ollama', baseUrl: `http://127.0.0.1:${providerPort}`, model: 'bench' }] }));
  const r = await spawnReady(process.execPath, [join(root, 'dist/cli.js'), 'serve', '--port', '0', '--config', config], {
    // RELAY_NODE_OPTIONS: V8 or Node options for the relays only (the floor and nginx keep theirs).
    env: { DESKRELAY_CONFIG_DIR: dir, ...(process.env.RELAY_NODE_OPTIONS ? { NODE_OPTIONS: process.env.RELAY_NODE_OPTIONS } : {}) },
    ready: (o) => {
      const url = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(o);
      const token = /"token":"(dr_[A-Za-z0-9_-]+)"/.exec(o);
      return url && token ? { port: Number(url[2]), token: token[1] } : undefined;
    },
  });
  return {
    child: r.child,
    pids: () => [r.child.pid],
    name: root,
    port: r.value.port,
    path: '/v1/chat/stream',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${r.value.token}` },
    body: (plan) => JSON.stringify({ messages: [{ role: 'user', content: JSON.stringify(plan) }] }),
  };
}

/** The string the agent benches' generated tree holds in 3 files (and 50 of its node_modules). */
export const AGENT_TREE_RARE = 'zq_rare_needle_4711';

/**
 * The agent benches' command line: `[--tree DIR] [--rounds 3] [ROOT ...]`; the tree defaults to
 * $TMPDIR/deskrelay-agent-tree, the roots to this checkout.
 */
export function agentBenchArgs(argv = process.argv.slice(2), { switches = [] } = {}) {
  const opt = (name, dflt) => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : dflt);
  // `--name VALUE` options take the next word; switches (`--no-rg`) do not.
  const takesValue = (a) => a !== undefined && a.startsWith('--') && !switches.includes(a.slice(2));
  const roots = argv.filter((a, i) => !a.startsWith('--') && !takesValue(argv[i - 1])).map((d) => resolve(d));
  if (roots.length === 0) roots.push(resolve(fileURLToPath(new URL('..', import.meta.url))));
  return {
    tree: resolve(opt('tree', join(tmpdir(), 'deskrelay-agent-tree'))),
    rounds: Number(opt('rounds', 3)),
    roots,
    opt,
    has: (name) => argv.includes(`--${name}`),
  };
}
