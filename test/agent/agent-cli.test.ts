/**
 * The workspace agent end to end (issue 23): the real CLI (`dist/cli.js serve --agent DIR`) on a
 * temporary git repository, driven over real HTTP as a phone would, with a scripted
 * OpenAI-compatible model (test/fixtures/providers/scripted.ts) that calls the tools and checks
 * the results it gets back.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { toolResults, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { decideAs, actAs } from '../helpers/devices';
import { agentCliSuite, alive, Follower, startCli, type Cli } from './support';

let model: ScriptedModel;
let cli: Cli & { configDir: string };
let repo: string;
let base: string;

const json = (token = cli.token) => ({ ...bearer(token), 'Content-Type': 'application/json' });
const post = (path: string, body: unknown) => send(cli.url, path, { method: 'POST', headers: json(), body: JSON.stringify(body) });
const get = (path: string) => send(cli.url, path, { headers: bearer(cli.token) });

/** A new session with the script set first; returns its id and a follower attached from event 0. */
async function session(prompt: string): Promise<{ id: string; events: Follower }> {
  const created = await post('/v1/agent/sessions', { prompt });
  expect(created.status, created.body).toBe(201);
  const events = new Follower(cli.url, cli.token, `/v1/agent/sessions/${created.json.id}/events`);
  return { id: created.json.id, events };
}

/** The phone's decision, signed with its key (issue 36). */
const decide = (id: string, callId: string, decision: string) => decideAs(cli, cli.phone, id, callId, decision);
const lastResult = (body: { messages: any[] }) => toolResults(body).at(-1)!.content;

const suite = agentCliSuite(
  'deskrelay-agent-',
  { 'src/math.js': 'export function add(a, b) {\n  return a - b;\n}\n', 'README.md': '# project\n', '.env': 'OPENAI_API_KEY=sk-live-secret\n' },
  ['src', 'README.md'],
  ({ base }) => writeFileSync(join(base, 'outside.txt'), 'not yours\n'),
);
beforeAll(() => void ({ model, cli, repo, base } = suite));

describe('the agent door', () => {
  it('lists the folder, ~-shortened name and path', async () => {
    const reply = await get('/v1/agent/folders');
    expect(reply.status).toBe(200);
    expect(reply.json.folders).toEqual([{ name: 'project', path: repo }]);
    expect(cli.stdout()).toContain('Workspace agent on in');
  });

  it('401 without the token, on every agent path', async () => {
    for (const path of ['/v1/agent/folders', '/v1/agent/sessions', '/v1/agent/sessions/x/events']) {
      const reply = await send(cli.url, path);
      expect(reply.status, path).toBe(401);
    }
    const wrong = await send(cli.url, '/v1/agent/sessions', { method: 'POST', headers: json('dr_wrong'), body: '{"prompt":"x"}' });
    expect(wrong.status).toBe(401);
  });

  it('refuses a bad body and an unknown folder (400), an unknown session (404)', async () => {
    expect((await post('/v1/agent/sessions', {})).json.error.code).toBe('request.invalid_body');
    const unknown = await post('/v1/agent/sessions', { prompt: 'x', folder: 'nope' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.message).toContain('"project"');
    expect((await get('/v1/agent/sessions/nope')).json.error.code).toBe('agent.not_found');
  });
});

describe('GET /v1/agent/files (the composer\'s @ suggestions)', () => {
  it('lists the folder\'s files matching q, file names first, never a protected or ignored one', async () => {
    writeFileSync(join(repo, '.gitignore'), 'build/\n');
    mkdirSync(join(repo, 'build'), { recursive: true });
    writeFileSync(join(repo, 'build', 'math.js'), 'ignored\n');
    mkdirSync(join(repo, 'math'), { recursive: true });
    writeFileSync(join(repo, 'math', 'index.js'), '\n');
    try {
      const all = await get('/v1/agent/files');
      expect(all.status, all.body).toBe(200);
      expect(all.json.folder).toBe('project');
      expect(all.json.files).toEqual(expect.arrayContaining(['README.md', 'src/math.js', 'math/index.js']));
      expect(all.json.files).not.toContain('.env');
      expect(all.json.files.some((f: string) => f.startsWith('build/') || f.startsWith('.git/'))).toBe(false);
      const math = await get('/v1/agent/files?folder=project&q=MATH');
      // src/math.js has "math" in its file name, math/index.js only in its folder.
      expect(math.json.files).toEqual(['src/math.js', 'math/index.js']);
      expect(math.json.truncated).toBe(false);
      expect((await get('/v1/agent/files?q=env')).json.files).toEqual([]);
    } finally {
      rmSync(join(repo, 'build'), { recursive: true, force: true });
      rmSync(join(repo, 'math'), { recursive: true, force: true });
      rmSync(join(repo, '.gitignore'));
    }
  });

  it('caps the answer at 50 paths and says so', async () => {
    mkdirSync(join(repo, 'many'), { recursive: true });
    for (let i = 0; i < 60; i++) writeFileSync(join(repo, 'many', `f${i}.txt`), '');
    try {
      const reply = await get('/v1/agent/files?q=many/');
      expect(reply.json.files).toHaveLength(50);
      expect(reply.json.truncated).toBe(true);
    } finally {
      rmSync(join(repo, 'many'), { recursive: true, force: true });
    }
  });

  it('needs the token; an unknown folder is 404 naming the folders', async () => {
    expect((await send(cli.url, '/v1/agent/files?q=a')).status).toBe(401);
    const unknown = await get('/v1/agent/files?folder=nope');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('agent.not_found');
    expect(unknown.json.error.message).toContain('"project"');
  });
});

describe('the agent at work', () => {
  it('reads, lists, searches and diffs without asking; logs the calls but never the contents', async () => {
    model.script([
      {
        check: (body) => {
          expect(body.messages[0].role).toBe('system');
          expect(body.messages.at(-1)).toMatchObject({ role: 'user', content: 'Why does add fail?' });
          expect(body.tools!.map((t: any) => t.function.name)).toEqual(['list_files', 'read_file', 'search', 'diagnostics', 'git_diff', 'edit_file', 'write_file', 'run_command']);
        },
        calls: [
          { name: 'list_files', arguments: {} },
          { name: 'read_file', arguments: { path: 'src/math.js', startLine: 2, endLine: 2 } },
          { name: 'search', arguments: { query: 'a - b' } },
          { name: 'git_diff', arguments: {} },
          { name: 'diagnostics', arguments: {} },
        ],
      },
      {
        check: (body) => {
          const results = toolResults(body).map((r) => r.content);
          expect(results[0]).toBe('README.md\nsrc/math.js');
          expect(results[1]).toBe('src/math.js (lines 2-2 of 3)\n2:   return a - b;');
          expect(results[2]).toBe('src/math.js:2:   return a - b;');
          expect(results[3]).toBe('No unstaged changes.');
          expect(results[4]).toMatch(/No problems list here/);
        },
        text: ['add ', 'subtracts.'],
      },
    ]);
    const { id, events } = await session('Why does add fail?');
    await events.waitStatus('idle');
    expect(events.of('approval')).toEqual([]);
    expect(events.of('tool_call').map((c) => c.tool)).toEqual(['list_files', 'read_file', 'search', 'git_diff', 'diagnostics']);
    expect(events.of('tool_result').every((r) => r.ok)).toBe(true);
    expect(events.of('text').map((t) => t.delta).join('')).toBe('add subtracts.');
    expect(events.events.every((e) => typeof e.id === 'number')).toBe(true);
    const snapshot = await get(`/v1/agent/sessions/${id}`);
    expect(snapshot.json).toMatchObject({ id, folder: 'project', status: 'idle', pending: [] });
    expect(snapshot.json.transcript.at(-1)).toEqual({ role: 'assistant', text: 'add subtracts.', toolCalls: [] });
    const list = await get('/v1/agent/sessions');
    expect(list.json.sessions.find((s: any) => s.id === id)).toMatchObject({ title: 'Why does add fail?', status: 'idle', pending: 0 });
    expect(cli.stderr()).toContain('read_file path="src/math.js"');
    expect(cli.stderr()).not.toContain('return a - b');
    expect(model.failures).toEqual([]);
    events.close();
  });

  it('an edit waits for approval; deny leaves the file byte-identical; a decided call is 409', async () => {
    const before = readFileSync(join(repo, 'src/math.js'));
    model.script([
      { calls: [{ name: 'edit_file', arguments: { path: 'src/math.js', old: 'a - b', new: 'a + b' } }] },
      { check: (body) => expect(lastResult(body)).toBe('The user denied this. Nothing was changed or run.'), text: ['OK, left it.'] },
    ]);
    const { id, events } = await session('Fix add');
    await events.waitStatus('waiting');
    const [approval] = events.of('approval');
    expect(approval).toMatchObject({ tool: 'edit_file', input: { path: 'src/math.js', old: 'a - b', new: 'a + b' } });
    expect(approval.diff).toBe('--- a/src/math.js\n+++ b/src/math.js\n@@ -1,3 +1,3 @@\n export function add(a, b) {\n-  return a - b;\n+  return a + b;\n }\n');
    expect((await get(`/v1/agent/sessions/${id}`)).json.pending).toEqual([approval].map(({ type: _t, ...rest }) => rest));
    expect(readFileSync(join(repo, 'src/math.js')).equals(before)).toBe(true);
    expect((await decide(id, approval.callId, 'deny')).status).toBe(204);
    await events.waitStatus('idle');
    expect(readFileSync(join(repo, 'src/math.js')).equals(before)).toBe(true);
    expect(events.of('tool_result')[0]).toMatchObject({ ok: false, denied: true });
    // Every screen following the session learns the decision, whichever screen made it.
    expect(events.of('decision')).toEqual([{ type: 'decision', callId: approval.callId, decision: 'deny' }]);
    const again = await decide(id, approval.callId, 'allow');
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('agent.not_pending');
    expect((await decide(id, approval.callId, 'maybe')).json.error.code).toBe('request.invalid_body');
    expect(cli.stderr()).toMatch(/edit_file path="src\/math.js" decision=deny/);
    expect(model.failures).toEqual([]);
    events.close();
  });

  it('a denial may carry a note: the model reads it, every screen sees it on the decision; a note that is not a short string is 400', async () => {
    model.script([
      { calls: [{ name: 'run_command', arguments: { command: 'echo noted' } }] },
      { check: (body) => expect(lastResult(body)).toBe('The user denied this. Nothing was changed or run.\nThe user said: use npm test'), text: ['OK.'] },
    ]);
    const { id, events } = await session('Run it');
    await events.waitStatus('waiting');
    const [approval] = events.of('approval');
    const deny = (note: unknown) => decideAs(cli, cli.phone, id, approval.callId, 'deny', {}, { note });
    expect((await deny(42)).json.error.code).toBe('request.invalid_body');
    expect((await deny('x'.repeat(2001))).json.error.code).toBe('request.invalid_body');
    expect((await deny('use npm test')).status).toBe(204);
    await events.waitStatus('idle');
    expect(events.of('decision')).toEqual([{ type: 'decision', callId: approval.callId, decision: 'deny', note: 'use npm test' }]);
    expect(model.failures).toEqual([]);
    events.close();
  });

  it('allow applies the edit; allow_session grants every edit, but a command only for that exact line', async () => {
    model.script([
      { calls: [{ name: 'edit_file', arguments: { path: 'src/math.js', old: 'a - b', new: 'a + b' } }] },
      { check: (body) => expect(lastResult(body)).toBe('Edited src/math.js.'), calls: [{ name: 'write_file', arguments: { path: 'src/new.js', content: 'one\n' } }] },
      { check: (body) => expect(lastResult(body)).toBe('Created src/new.js.'), calls: [{ name: 'write_file', arguments: { path: 'src/new.js', content: 'two\n' } }] },
      { check: (body) => expect(lastResult(body)).toBe('Wrote src/new.js.'), calls: [{ name: 'run_command', arguments: { command: 'echo once' } }] },
      { check: (body) => expect(lastResult(body)).toBe('Exit code 0.\nonce\n'), calls: [{ name: 'run_command', arguments: { command: 'echo once' } }] },
      { check: (body) => expect(lastResult(body)).toBe('Exit code 0.\nonce\n'), calls: [{ name: 'run_command', arguments: { command: 'echo twice' } }] },
      { check: (body) => expect(lastResult(body)).toMatch(/denied/), text: ['done'] },
    ]);
    const { id, events } = await session('Fix add and more');
    await events.waitFor((f) => f.of('approval').length === 1, 'the edit approval');
    expect((await decide(id, events.of('approval')[0].callId, 'allow')).status).toBe(204);
    await events.waitFor((f) => f.of('approval').length === 2, 'the first write approval');
    expect(readFileSync(join(repo, 'src/math.js'), 'utf8')).toContain('return a + b;');
    const write = events.of('approval')[1];
    expect(write.diff).toBe('--- /dev/null\n+++ b/src/new.js\n@@ -0,0 +1 @@\n+one\n'.replace('+1 @@', '+1,1 @@'));
    expect((await decide(id, write.callId, 'allow_session')).status).toBe(204);
    // The second write asks nothing; the first command does.
    await events.waitFor((f) => f.of('approval').length === 3, 'the command approval');
    const command = events.of('approval')[2];
    expect(command).toMatchObject({ tool: 'run_command', command: 'echo once' });
    expect(readFileSync(join(repo, 'src/new.js'), 'utf8')).toBe('two\n');
    expect((await decide(id, command.callId, 'allow_session')).status).toBe(204);
    // The same line again runs at once; another line asks.
    await events.waitFor((f) => f.of('approval').length === 4, 'the second command approval');
    expect(events.of('approval')[3]).toMatchObject({ command: 'echo twice' });
    expect((await decide(id, events.of('approval')[3].callId, 'deny')).status).toBe(204);
    await events.waitStatus('idle');
    expect(model.failures).toEqual([]);
    expect(events.of('decision').map((d) => d.decision)).toEqual(['allow', 'allow_session', 'allow_session', 'deny']);
    expect(cli.stderr()).toMatch(/run_command command="echo once" decision=allowed_for_session/);
    events.close();
  });

  it('a command gives its output and exit code, and runs without DeskRelay variables', async () => {
    model.script([
      { calls: [{ name: 'run_command', arguments: { command: 'echo out; echo err >&2; env | grep -c DESKRELAY_; exit 3' } }] },
      { check: (body) => expect(lastResult(body)).toBe('Exit code 3.\nout\nerr\n0\n'), text: ['It failed with 3.'] },
    ]);
    const { id, events } = await session('run it');
    await events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    await decide(id, events.of('approval')[0].callId, 'allow');
    await events.waitStatus('idle');
    expect(events.of('tool_result')[0]).toEqual({ type: 'tool_result', callId: events.of('approval')[0].callId, ok: true, output: 'Exit code 3.\nout\nerr\n0\n' });
    expect(model.failures).toEqual([]);
    events.close();
  });

  it('a message sent while the agent works is queued and joins when the model next stops', async () => {
    model.script([
      { calls: [{ name: 'run_command', arguments: { command: 'true' } }] },
      {
        check: (body) => {
          const tail = body.messages.slice(-2);
          expect(tail[0]).toMatchObject({ role: 'tool', content: 'Exit code 0.\n(no output)' });
          expect(tail[1]).toEqual({ role: 'user', content: 'also look at the README' });
        },
        text: ['will do'],
      },
    ]);
    const { id, events } = await session('run true');
    await events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    expect((await post(`/v1/agent/sessions/${id}/messages`, { text: 'also look at the README' })).status).toBe(202);
    expect(events.of('user').map((u) => u.text)).toEqual(['run true']);
    await decide(id, events.of('approval')[0].callId, 'allow');
    await events.waitStatus('idle');
    expect(events.of('user').map((u) => u.text)).toEqual(['run true', 'also look at the README']);
    expect(model.failures).toEqual([]);
    events.close();
  });

  it('refuses path escapes and protected files as the tool result, before any approval', async () => {
    model.script([
      {
        calls: [
          { name: 'read_file', arguments: { path: '../outside.txt' } },
          { name: 'read_file', arguments: { path: join(base, 'outside.txt') } },
          { name: 'read_file', arguments: { path: '.env' } },
          { name: 'write_file', arguments: { path: '.git/hooks/pre-commit', content: '#!/bin/sh\necho pwned\n' } },
          { name: 'edit_file', arguments: { path: '../outside.txt', old: 'not', new: 'now' } },
          { name: 'search', arguments: { query: 'sk-live-secret' } },
        ],
      },
      {
        check: (body) => {
          const results = toolResults(body).slice(-6).map((r) => r.content);
          expect(results[0]).toMatch(/outside the folder/);
          expect(results[1]).toMatch(/not a path relative to the folder/);
          expect(results[2]).toMatch(/protected file/);
          expect(results[3]).toMatch(/protected file/);
          expect(results[4]).toMatch(/outside the folder/);
          expect(results[5]).toBe('No matches for "sk-live-secret".');
        },
        text: ['Cannot.'],
      },
    ]);
    const { events } = await session('Read the secrets');
    await events.waitStatus('idle');
    expect(events.of('approval')).toEqual([]);
    expect(existsSync(join(repo, '.git/hooks/pre-commit'))).toBe(false);
    expect(readFileSync(join(base, 'outside.txt'), 'utf8')).toBe('not yours\n');
    expect(JSON.stringify(events.events)).not.toContain('OPENAI_API_KEY=');
    expect(model.failures).toEqual([]);
    events.close();
  });

  it('stop kills a running command with every process it started, and denies what waits', async () => {
    const pidFile = join(base, 'bg.pid');
    model.script([{ calls: [{ name: 'run_command', arguments: { command: `sleep 300 & echo $! > ${pidFile}; echo $$ >> ${pidFile}; sleep 300` } }] }]);
    const { id, events } = await session('Run forever');
    await events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    await decide(id, events.of('approval')[0].callId, 'allow');
    await events.waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim().split('\n').length === 2, 'the pids');
    const pids = readFileSync(pidFile, 'utf8').trim().split('\n').map(Number);
    expect(pids.every(alive)).toBe(true);
    const served = model.served;
    expect((await post(`/v1/agent/sessions/${id}/stop`, {})).status).toBe(204);
    await events.waitStatus('stopped');
    await events.waitFor((f) => f.of('tool_result').length === 1, 'the stopped result');
    expect(events.of('tool_result')[0].output).toMatch(/^Stopped by the user/);
    await expect.poll(() => pids.filter(alive), { timeout: 5_000 }).toEqual([]);
    expect(model.served).toBe(served);
    expect((await get(`/v1/agent/sessions/${id}`)).json.status).toBe('stopped');
    events.close();
  });

  it('events resume after a cut with Last-Event-ID: what came after it, then live', async () => {
    model.script([
      { calls: [{ name: 'read_file', arguments: { path: 'README.md' } }] },
      { text: ['read ', 'it'] },
    ]);
    const { id, events } = await session('Read the readme');
    await events.waitStatus('idle');
    const all = events.events;
    events.close();
    const cut = all[3]!.id!;
    const after = all.filter((e) => e.id! > cut);
    expect(after.length).toBeGreaterThan(0);
    const resumed = new Follower(cli.url, cli.token, `/v1/agent/sessions/${id}/events`, cut);
    await resumed.waitFor((f) => f.events.length === after.length, 'the replay');
    expect(resumed.events).toEqual(after);
    // Still open: the next turn arrives live on the same stream.
    model.script([{ text: ['again'] }]);
    expect((await post(`/v1/agent/sessions/${id}/messages`, { text: 'more' })).status).toBe(202);
    await resumed.waitFor((f) => f.of('text').some((t) => t.delta === 'again'), 'the live turn');
    await resumed.waitFor((f) => f.events.at(-1)?.data.status === 'idle', 'idle again');
    const ids = resumed.events.map((e) => e.id!);
    expect(ids).toEqual(ids.map((_, i) => cut + 1 + i));
    // The same stream answers a POST (quick tunnels hold a GET event stream back until it closes).
    const viaPost = await send(cli.url, `/v1/agent/sessions/${id}/events`, {
      method: 'POST',
      headers: { ...bearer(cli.token), 'Last-Event-ID': String(cut) },
      abortWhen: (body) => body.includes('"type":"status","status":"idle"'),
    });
    expect(viaPost.status).toBe(200);
    expect(viaPost.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(viaPost.body).toContain(`id: ${cut + 1}\n`);
    expect(viaPost.body).not.toContain(`id: ${cut}\n`);
    const tooFar = await send(cli.url, `/v1/agent/sessions/${id}/events`, { headers: { ...bearer(cli.token), 'Last-Event-ID': '99999' } });
    expect(tooFar.json.error.code).toBe('request.invalid_header');
    resumed.close();
    expect(model.failures).toEqual([]);
  });

  it('ends a runaway turn at the step cap with a message', async () => {
    model.script(Array.from({ length: 41 }, () => ({ calls: [{ name: 'list_files', arguments: { path: 'src' } }] })));
    const served = model.served;
    const { events } = await session('Loop');
    await events.waitStatus('idle');
    expect(model.served - served).toBe(40);
    expect(events.of('error').at(-1).message).toMatch(/after 40 model calls/);
    events.close();
  });

  it('DELETE ends the session and its event streams', async () => {
    model.script([{ text: ['hi'] }]);
    const { id, events } = await session('hello');
    await events.waitStatus('idle');
    expect((await actAs(cli, id, 'delete')).status).toBe(204);
    await events.waitFor((f) => f.ended, 'the stream to end');
    expect((await get(`/v1/agent/sessions/${id}`)).status).toBe(404);
  });
});

describe('without --agent', () => {
  it('every agent path answers 403 agent.disabled, saying how to turn it on', async () => {
    const off = await startCli([], `${model.url}/v1`);
    try {
      for (const [method, path] of [['GET', '/v1/agent/folders'], ['GET', '/v1/agent/files?q=a'], ['POST', '/v1/agent/sessions'], ['GET', '/v1/agent/sessions/x/events']] as const) {
        const reply = await send(off.url, path, { method, headers: { ...bearer(off.token), 'Content-Type': 'application/json' }, body: method === 'POST' ? '{"prompt":"x"}' : undefined });
        expect(reply.status, path).toBe(403);
        expect(reply.json.error.code).toBe('agent.disabled');
        expect(reply.json.error.message).toContain('--agent DIR');
      }
      expect((await send(off.url, '/v1/agent/folders')).status).toBe(401);
    } finally {
      off.child.kill('SIGKILL');
      rmSync(off.configDir, { recursive: true, force: true });
    }
  });
});
