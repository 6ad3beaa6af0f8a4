// Helpers for bench/run.mjs: processes, /proc readings, the streaming client, statistics.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
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
