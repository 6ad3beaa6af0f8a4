// Provider transport, measured: node:http (what providers/ uses) against undici's request and
// stream APIs, reading the same stand-in (bench/standin.mjs, Ollama NDJSON, one chunk a token)
// and doing the same work per read (decode, split lines, JSON.parse), so only the transport differs.
//
//   node bench/transport.mjs [--rounds 3] [--tokens 1000000]
//
// Each (client, scenario) runs in its own child process, clients alternating round by round, so
// JIT warm-up and GC of one does not land on another. Reported per client, median of the rounds:
//   flat      one stream of --tokens tokens as fast as the client reads: client CPU s per million
//   wide      100 concurrent streams x (--tokens / 100): client CPU s per million
//   setup     2,000 one-token replies, 20 in flight: client CPU ms per request
//   ttfb      300 one-token replies one after the other: request start to first body byte, p50/p99 ms
// undici comes from node_modules (a copy is already there as a dependency of @vscode/vsce); the
// script never installs anything.
import { spawn } from 'node:child_process';
import { request as httpRequest, Agent as HttpAgent } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLIENTS = ['node:http', 'undici.request', 'undici.stream'];
const SCENARIOS = ['flat', 'wide', 'setup', 'ttfb'];

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? dflt : args[i + 1];
};

if (args.includes('--help')) {
  console.log('usage: node bench/transport.mjs [--rounds N] [--tokens N]');
  process.exit(0);
}

async function main() {
  const rounds = Number(flag('rounds', 3));
  const tokens = Number(flag('tokens', 1_000_000));
  // The stand-in's own warnings (listeners it adds while it waits for drain) are not ours to print.
  const standin = spawn(process.execPath, [join(HERE, 'standin.mjs')], { stdio: ['pipe', 'pipe', 'ignore'] });
  const port = await new Promise((resolve) => {
    let out = '';
    standin.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]).port);
    });
  });
  const { version } = JSON.parse(await import('node:fs').then((fs) => fs.readFileSync(join(HERE, '../node_modules/undici/package.json'), 'utf8')));
  const results = {};
  try {
    for (let r = 0; r < rounds; r++) {
      for (const scenario of SCENARIOS) {
        for (const client of r % 2 === 0 ? CLIENTS : [...CLIENTS].reverse()) {
          const out = await runChild(client, scenario, port, tokens);
          ((results[client] ??= {})[scenario] ??= []).push(out);
          process.stderr.write(`round ${r + 1} ${scenario} ${client}: ${JSON.stringify(out)}\n`);
        }
      }
    }
  } finally {
    standin.stdin.end();
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const fmt = (x, d = 2) => x.toFixed(d);
  const lines = [
    `node ${process.version}, undici ${version}, ${rounds} rounds, ${tokens.toLocaleString('en')} tokens per throughput run (medians)`,
    '',
    '| client | flat: CPU s / M tokens | wide (100 streams): CPU s / M tokens | set-up: CPU ms / request | TTFB p50 / p99 ms |',
    '|---|---|---|---|---|',
  ];
  for (const c of CLIENTS) {
    const r = results[c];
    lines.push(
      `| ${c} | ${fmt(med(r.flat.map((x) => x.cpuPerMillion)))} | ${fmt(med(r.wide.map((x) => x.cpuPerMillion)))} | ${fmt(med(r.setup.map((x) => x.cpuMsPerRequest)), 3)} | ${fmt(med(r.ttfb.map((x) => x.p50)), 3)} / ${fmt(med(r.ttfb.map((x) => x.p99)), 3)} |`,
    );
  }
  console.log(lines.join('\n'));
}

function runChild(client, scenario, port, tokens) {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', client, '--scenario', scenario, '--port', String(port), '--tokens', String(tokens)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${client} ${scenario} exited ${code}`))));
  });
}

// ---- the child: one client, one scenario ----

/** The per-read work every client does alike: decode, split lines, parse each. */
let reads = 0;
function lineCounter() {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let count = 0;
  let done = false;
  return {
    feed(buf) {
      reads++;
      const text = pending + decoder.write(buf);
      let start = 0;
      for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
        const obj = JSON.parse(text.slice(start, nl));
        if (obj.done === true) done = true;
        else if (typeof obj.message?.content === 'string') count++;
        start = nl + 1;
      }
      pending = text.slice(start);
    },
    get count() {
      return count;
    },
    get done() {
      return done;
    },
  };
}

const body = (n) => JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: JSON.stringify({ n, interval: 0, hold: 0 }) }], stream: true });

async function child(client, scenario, port, tokens) {
  const origin = `http://127.0.0.1:${port}`;
  const stream = await clientFor(client, origin);
  // Warm up JIT and the pool, off the clock.
  for (let i = 0; i < 20; i++) await stream(2_000, () => {});
  reads = 0;
  const cpu0 = process.cpuUsage();
  const cpuSince = () => {
    const d = process.cpuUsage(cpu0);
    return (d.user + d.system) / 1e6;
  };
  let out;
  if (scenario === 'flat') {
    const n = await stream(tokens, () => {});
    out = { tokens: n, cpuPerMillion: (cpuSince() / n) * 1e6, tokensPerRead: n / reads };
  } else if (scenario === 'wide') {
    const per = Math.ceil(tokens / 100);
    const counts = await Promise.all(Array.from({ length: 100 }, () => stream(per, () => {})));
    const n = counts.reduce((a, b) => a + b, 0);
    out = { tokens: n, cpuPerMillion: (cpuSince() / n) * 1e6 };
  } else if (scenario === 'setup') {
    const total = 2_000;
    let next = 0;
    await Promise.all(Array.from({ length: 20 }, async () => {
      while (next++ < total) await stream(1, () => {});
    }));
    out = { requests: total, cpuMsPerRequest: (cpuSince() / total) * 1e3 };
  } else {
    const ttfb = [];
    for (let i = 0; i < 300; i++) {
      const t0 = process.hrtime.bigint();
      let t1;
      await stream(1, () => (t1 ??= process.hrtime.bigint()));
      ttfb.push(Number(t1 - t0) / 1e6);
    }
    ttfb.sort((a, b) => a - b);
    out = { p50: ttfb[150], p99: ttfb[296] };
  }
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
}

/** A function that streams one reply of n tokens and resolves with the tokens it parsed. */
async function clientFor(client, origin) {
  const headers = { 'content-type': 'application/json', accept: 'application/x-ndjson' };
  if (client === 'node:http') {
    const agent = new HttpAgent({ keepAlive: true, timeout: 4_000 });
    const u = new URL('/api/chat', origin);
    return (n, onFirst) =>
      new Promise((resolve, reject) => {
        const payload = body(n);
        const req = httpRequest(u, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(payload) } });
        req.on('response', (res) => {
          const lines = lineCounter();
          res.on('data', (buf) => {
            onFirst();
            lines.feed(buf);
          });
          res.on('end', () => resolve(lines.count));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(payload);
      });
  }
  const undici = await import('undici');
  const dispatcher = new undici.Agent({ keepAliveTimeout: 4_000 });
  const url = `${origin}/api/chat`;
  if (client === 'undici.request') {
    return async (n, onFirst) => {
      const { body: res } = await undici.request(url, { method: 'POST', headers, body: body(n), dispatcher });
      const lines = lineCounter();
      await new Promise((resolve, reject) => {
        res.on('data', (buf) => {
          onFirst();
          lines.feed(buf);
        });
        res.on('end', resolve);
        res.on('error', reject);
      });
      return lines.count;
    };
  }
  return async (n, onFirst) => {
    const lines = lineCounter();
    await undici.stream(url, { method: 'POST', headers, body: body(n), dispatcher }, () =>
      new Writable({
        write(buf, _enc, cb) {
          onFirst();
          lines.feed(buf);
          cb();
        },
      }),
    );
    return lines.count;
  };
}

if (flag('child')) await child(flag('child'), flag('scenario'), Number(flag('port')), Number(flag('tokens')));
else await main();
