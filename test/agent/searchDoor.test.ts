/**
 * The agent's `search` through the real CLI (`dist/cli.js serve --agent DIR`, issue 28): with `rg`
 * on PATH the relay searches through it, without one through its plain search, and the phone
 * gets the same answer either way; and a search that runs long never holds up another stream of
 * the relay. The model is the scripted OpenAI-compatible one (test/fixtures/providers/scripted.ts).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findRipgrep } from '../../server/src/agent/hosts/node/ripgrep';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, chatHeaders, parseEvents, send } from '../helpers/http';
import { Follower, startCli, waitUntil, type Cli } from './support';

type Started = Cli & { configDir: string };

let model: ScriptedModel;
let base: string;
let repo: string;
let runs: string;
let withRg: string;
const started: Started[] = [];
// This machine's own rg (Debian's `ripgrep` package here), and a PATH without any.
const realRg = findRipgrep();
const noRgPath = (process.env.PATH ?? '').split(delimiter).filter((d) => d !== '' && !existsSync(join(d, 'rg'))).join(delimiter);

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-search-door-')));
  repo = join(base, 'project');
  mkdirSync(join(repo, 'src'), { recursive: true });
  mkdirSync(join(repo, 'build'));
  mkdirSync(join(repo, 'slow'));
  writeFileSync(join(repo, '.gitignore'), 'build/\n');
  writeFileSync(join(repo, 'src', 'a.ts'), 'export const needle = 1;\nconst x = 2;\n  return needle + x;\n');
  writeFileSync(join(repo, 'src', 'b.ts'), 'nothing to see\n');
  writeFileSync(join(repo, 'build', 'a.js'), 'const needle = 1;\n');
  writeFileSync(join(repo, '.env'), 'NEEDLE=needle-secret\n');
  // A line on which `(a+)+$` backtracks for ever.
  writeFileSync(join(repo, 'slow', 'x.txt'), `${'a'.repeat(40)}!\n`);
  // An `rg` that notes each run, so a test knows ripgrep answered and not the plain search.
  runs = join(base, 'rg-runs');
  withRg = join(base, 'bin');
  mkdirSync(withRg);
  if (realRg) writeFileSync(join(withRg, 'rg'), `#!/bin/sh\necho run >> ${runs}\nexec ${realRg} "$@"\n`, { mode: 0o755 });
  model = await startScriptedModel();
});

afterAll(async () => {
  for (const cli of started) {
    cli.child.kill('SIGKILL');
    rmSync(cli.configDir, { recursive: true, force: true });
  }
  await model?.close();
  rmSync(base, { recursive: true, force: true });
});

async function cli(path: string): Promise<Started> {
  const c = await startCli(['--agent', repo], `${model.url}/v1`, { PATH: path });
  started.push(c);
  return c;
}

/** One agent session whose model calls search with `input`; the follower of its events. */
async function searchSession(c: Started, input: Record<string, unknown>): Promise<Follower> {
  model.script([{ calls: [{ name: 'search', arguments: input }] }, { text: ['fine'] }, { text: ['fine'] }]);
  const created = await send(c.url, '/v1/agent/sessions', { method: 'POST', headers: { ...bearer(c.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'find it' }) });
  expect(created.status, created.body).toBe(201);
  return new Follower(c.url, c.token, `/v1/agent/sessions/${created.json.id}/events`);
}

const ranRg = () => (existsSync(runs) ? readFileSync(runs, 'utf8').split('\n').length - 1 : 0);

describe('search through the agent door', () => {
  it.skipIf(!realRg)('uses rg when it is on PATH and the plain search when not, with the same answer', async () => {
    const answers: string[] = [];
    for (const [path, ripgrep] of [[`${withRg}${delimiter}${noRgPath}`, true], [noRgPath, false]] as const) {
      const before = ranRg();
      const events = await searchSession(await cli(path), { query: 'needle' });
      await events.waitStatus('idle');
      const [result] = events.of('tool_result');
      expect(result.ok).toBe(true);
      answers.push(result.output);
      // Each session runs one search: through the wrapper, or not at all.
      expect(ranRg() - before, ripgrep ? 'rg on PATH' : 'no rg on PATH').toBe(ripgrep ? 1 : 0);
      events.close();
    }
    // build/ is ignored and .env is a secret: neither is searched, whichever search answers.
    expect(answers).toEqual(['src/a.ts:1: export const needle = 1;\nsrc/a.ts:3:   return needle + x;', 'src/a.ts:1: export const needle = 1;\nsrc/a.ts:3:   return needle + x;']);
    expect(model.failures).toEqual([]);
  });

  it('a chat stream keeps flowing while a search of the same relay runs', async () => {
    const c = await cli(noRgPath);
    // The chat: 160 tokens, one every 40 ms, from the model; the client counts them as they come.
    const tokens = Array.from({ length: 160 }, (_, i) => `t${i} `);
    model.script([{ text: tokens, paceMs: 40 }, { calls: [{ name: 'search', arguments: { query: '(a+)+$', regex: true, path: 'slow' } }] }, { text: ['fine'] }]);
    let received = 0;
    let chatBody = '';
    const chatDone = new Promise<void>((resolve, reject) => {
      const u = new URL(c.url);
      const req = request({ host: u.hostname, port: u.port, path: '/v1/chat/stream', method: 'POST', headers: chatHeaders(c.token), agent: false }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          chatBody += d;
          received = parseEvents(chatBody).length;
        });
        res.on('end', resolve);
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }] }));
    });
    await waitUntil(() => received > 0, () => 'the chat to start');
    // The search: the model's second step calls it, on a line where `(a+)+$` backtracks for ever,
    // so the plain search runs for its whole 5 s budget. The chat tokens counted when its call and
    // its result reach the client, read in the order the two streams' bytes arrive here.
    const created = await send(c.url, '/v1/agent/sessions', { method: 'POST', headers: { ...bearer(c.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'find it' }) });
    expect(created.status, created.body).toBe(201);
    const seen: Record<string, number> = {};
    const result = await new Promise<any>((resolve, reject) => {
      const u = new URL(c.url);
      let buffer = '';
      const req = request({ host: u.hostname, port: u.port, path: `/v1/agent/sessions/${created.json.id}/events`, headers: bearer(c.token), agent: false }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buffer += d;
          const blocks = buffer.split('\n\n');
          buffer = blocks.pop()!;
          for (const e of parseEvents(blocks.join('\n\n'))) {
            if (e.type === 'tool_call' || e.type === 'tool_result') seen[e.type] ??= received;
            if (e.type === 'tool_result') {
              req.destroy();
              resolve(e);
            }
          }
        });
        res.on('error', () => {});
      });
      req.on('error', reject);
      req.end();
    });
    expect(result).toMatchObject({ ok: false, output: expect.stringMatching(/took longer than 5 s/) });
    // Before the search moved off the relay's thread, not one token came between the two.
    expect(seen.tool_result! - seen.tool_call!, JSON.stringify(seen)).toBeGreaterThanOrEqual(20);
    await chatDone;
    expect(parseEvents(chatBody).at(-1)).toEqual({ type: 'done', content: tokens.join('') });
    expect(model.failures).toEqual([]);
  });
});
