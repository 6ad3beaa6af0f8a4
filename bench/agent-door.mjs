#!/usr/bin/env node
// The agent's tools at scale through the agent door (issue 28), to check what bench/agent.mjs
// measures on the Workspace host directly: a real `dist/cli.js serve --agent TREE` for each ROOT
// given (default this tree), the scripted OpenAI-compatible model of the tests
// (test/fixtures/providers/scripted.ts, bundled here with esbuild) calling one tool per session,
// the session's events read over SSE as the phone reads them. Per tool: the time from the
// `tool_call` event to its `tool_result` event as the client sees them, and the relay's peak RSS
// meanwhile (from /proc, sampled every 5 ms). The tree is bench/agent.mjs's (generate it first).
//
//   node bench/agent-door.mjs [--tree DIR] [--rounds 3] [--cpu-prof DIR] [--no-rg] [ROOT ...]
//
// --cpu-prof DIR: each relay writes a V8 CPU profile there on exit (summarise it with
// bench/cpuprofile-top.mjs). --no-rg: the relays' PATH leaves out every folder with an `rg`, so
// a relay that would search with ripgrep uses its plain search.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AGENT_TREE_RARE, agentBenchArgs, clockTicks, median, rssBytes, spawnReady, stopProcess } from './lib.mjs';

/** CPU ms of a process and of the children it has waited for (an rg it ran), from /proc/<pid>/stat. */
function cpuWithChildrenMs(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / clockTicks();
}

const HERE = dirname(fileURLToPath(import.meta.url));
const { tree: TREE, rounds: R, roots, opt, has } = agentBenchArgs(undefined, { switches: ['no-rg'] });
const PROF = opt('cpu-prof');
const PATH = has('no-rg') ? (process.env.PATH ?? '').split(delimiter).filter((d) => !existsSync(join(d, 'rg'))).join(delimiter) : process.env.PATH;
const RARE = AGENT_TREE_RARE;

const { build } = await import(pathToFileURL(join(HERE, '../node_modules/esbuild/lib/main.js')).href);
const bundled = join(mkdtempSync(join(tmpdir(), 'deskrelay-door-bench-')), 'scripted.mjs');
await build({ entryPoints: [join(HERE, '../test/fixtures/providers/scripted.ts')], bundle: true, platform: 'node', format: 'esm', outfile: bundled, logLevel: 'silent' });
const { startScriptedModel } = await import(pathToFileURL(bundled).href);
const model = await startScriptedModel();

async function startCli(root) {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-door-cfg-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ activeProvider: 'scripted', providers: [{ id: 'scripted', kind: 'openai-compatible', baseUrl: `${model.url}/v1`, model: 'gpt-4o' }] }));
  const r = await spawnReady(process.execPath, [...(PROF ? ['--cpu-prof', '--cpu-prof-dir', resolve(PROF)] : []), join(root, 'dist/cli.js'), 'serve', '--port', '0', '--agent', TREE], {
    env: { DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: '', PATH },
    ready: (o) => {
      const m = /\{"url":"(http:[^"]+)","token":"(dr_[^"]+)"\}/.exec(o);
      return m ? { url: new URL(m[1]), token: m[2] } : undefined;
    },
  });
  return { root, child: r.child, ...r.value };
}

function call(cli, method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request({ host: cli.url.hostname, port: cli.url.port, method, path, headers: { authorization: `Bearer ${cli.token}`, ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => (text += d)).on('end', () => resolve({ status: res.statusCode, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** One session whose model calls `tool` once, then answers; times tool_call → tool_result as the client reads them. */
async function once(cli, tool, input) {
  model.script([{ calls: [{ name: tool, arguments: input }] }, { text: ['done'] }]);
  const created = await call(cli, 'POST', '/v1/agent/sessions', { prompt: `use ${tool}` });
  if (created.status !== 201) throw new Error(`session: HTTP ${created.status} ${JSON.stringify(created.json)}`);
  const rss0 = rssBytes(cli.child.pid);
  const cpu0 = cpuWithChildrenMs(cli.child.pid);
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(cli.child.pid))), 5);
  const out = await new Promise((resolve, reject) => {
    let callAt;
    let result;
    let rest = '';
    const req = request({ host: cli.url.hostname, port: cli.url.port, path: `/v1/agent/sessions/${created.json.id}/events`, headers: { authorization: `Bearer ${cli.token}` } }, (res) => {
      res.setEncoding('utf8').on('data', (d) => {
        const now = performance.now();
        const parts = (rest + d).split('\n\n');
        rest = parts.pop();
        for (const p of parts) {
          const line = p.split('\n').find((l) => l.startsWith('data: '));
          if (!line) continue;
          const e = JSON.parse(line.slice(6));
          if (e.type === 'tool_call') callAt = now;
          if (e.type === 'tool_result') result = { ms: now - callAt, result: e };
          // The session's last model request is made before it goes idle: ending the session
          // sooner let that request take the next session's script step, and the bench hung.
          if (e.type === 'status' && e.status === 'idle' && result) {
            req.destroy();
            resolve(result);
          }
          if (e.type === 'error') {
            req.destroy();
            reject(new Error(e.message));
          }
        }
      });
    });
    req.on('error', () => {});
    req.end();
  });
  clearInterval(sampler);
  const cpuMs = cpuWithChildrenMs(cli.child.pid) - cpu0;
  await call(cli, 'DELETE', `/v1/agent/sessions/${created.json.id}`);
  return { ...out, cpuMs, rssPeakMiB: (peak - rss0) / 2 ** 20 };
}

const CASES = [
  ['search rare string, root (50,000 files)', 'search', { query: RARE }],
  ['list_files root', 'list_files', {}],
  ['read_file (4 KiB)', 'read_file', { path: 's2/m0/pkg0/file10.ts' }],
];
const clis = [];
for (const root of roots) clis.push(await startCli(root));
const rows = Object.fromEntries(clis.map((c) => [c.root, Object.fromEntries(CASES.map(([n]) => [n, []]))]));
for (const c of clis) for (const [, tool, input] of CASES) await once(c, tool, input);
for (let r = 0; r < R; r++) {
  for (const c of clis) {
    for (const [name, tool, input] of CASES) {
      const m = await once(c, tool, input);
      rows[c.root][name].push(m);
      if (r === 0) console.log(`${c.root}: ${name}: ${m.ms.toFixed(1)} ms, relay CPU ${m.cpuMs.toFixed(0)} ms, relay RSS +${m.rssPeakMiB.toFixed(1)} MiB (${JSON.stringify(m.result).slice(0, 160)}…)`);
    }
  }
}
console.log(`\nthrough the door, medians over ${R} rounds (tool_call → tool_result as the client reads them; the relay's CPU with its threads and the rg it ran, over the whole session: less sensitive to the machine's load than the time; relay peak RSS above the start):`);
for (const c of clis) {
  console.log(`  ${c.root}`);
  for (const [name] of CASES) {
    const xs = rows[c.root][name];
    console.log(`    ${name.padEnd(42)} ${median(xs.map((x) => x.ms)).toFixed(1).padStart(8)} ms   CPU ${median(xs.map((x) => x.cpuMs)).toFixed(0).padStart(5)} ms   RSS +${median(xs.map((x) => x.rssPeakMiB)).toFixed(1)} MiB`);
  }
}
for (const c of clis) await stopProcess(c.child);
await model.close();
