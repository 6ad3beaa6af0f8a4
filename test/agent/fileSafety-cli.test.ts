/**
 * The agent's file safety through the real CLI (`dist/cli.js serve --agent DIR`, issue 35).
 * A FIFO in the folder (finding 7): five sessions whose scripted model reads `pipe.txt` used up libuv's four-thread
 * pool, each blocked opening the FIFO for a writer that never comes, and the relay's own file
 * I/O (the web client's static files, every other read) hung behind them. Now each read is
 * refused at once with a message, and the relay still serves files. And the composer's `@`
 * suggestions (finding 11) list no file of the deny list, whatever its case.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startScriptedModel, toolResults, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { Follower, startCli, type Cli } from './support';

let model: ScriptedModel;
let cli: Cli & { configDir: string };
let dir: string;
const followers: Follower[] = [];

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-fifo-')));
  writeFileSync(join(dir, 'README.md'), '# fine\n');
  execFileSync('mkfifo', [join(dir, 'pipe.txt')]);
  model = await startScriptedModel();
  cli = await startCli(['--agent', dir], `${model.url}/v1`);
});

afterAll(async () => {
  for (const f of followers) f.close();
  cli?.child.kill('SIGKILL');
  await model?.close();
  // A reader still blocked in open() (the failing run) is let go, so nothing is left waiting.
  try {
    closeSync(openSync(join(dir, 'pipe.txt'), constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // no reader
  }
  rmSync(dir, { recursive: true, force: true });
  if (cli) rmSync(cli.configDir, { recursive: true, force: true });
});

/** A session whose model reads `path` once and then says what it got; its events from the start. */
async function reading(path: string, expected: RegExp): Promise<Follower> {
  model.script([
    { calls: [{ name: 'read_file', arguments: { path } }] },
    { check: (body) => expect(toolResults(body).at(-1)!.content).toMatch(expected), text: ['read'] },
  ]);
  const created = await send(cli.url, '/v1/agent/sessions', { method: 'POST', headers: { ...bearer(cli.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: `read ${path}` }) });
  expect(created.status, created.body).toBe(201);
  const events = new Follower(cli.url, cli.token, `/v1/agent/sessions/${created.json.id}/events`);
  followers.push(events);
  return events;
}

it('five read_file calls on a FIFO are each refused at once; the relay then still serves a static file and reads a file', async () => {
  for (let i = 0; i < 5; i++) {
    const events = await reading('pipe.txt', /not a regular file/);
    // Before the fix the read never answered: the wait times out and the test fails here.
    await events.waitFor((f) => f.of('tool_result').length === 1, `read_file pipe.txt #${i + 1} to answer`, 5_000);
    expect(events.of('tool_result')[0]).toMatchObject({ ok: false, output: expect.stringMatching(/"pipe.txt" is not a regular file/) });
    await events.waitStatus('idle');
  }
  // libuv's pool is free: sirv streams the web client's stylesheet, and another read answers.
  const css = await send(cli.url, '/app.css', { timeoutMs: 5_000 });
  expect(css.status).toBe(200);
  expect(css.body.length).toBeGreaterThan(0);
  const events = await reading('README.md', /# fine/);
  await events.waitStatus('idle');
  expect(events.of('tool_result')[0]).toMatchObject({ ok: true, output: 'README.md (lines 1-1 of 1)\n1: # fine' });
  expect(model.failures).toEqual([]);
});

it('the composer\'s @ suggestions (GET /v1/agent/files) never offer a protected file, in any case, nor a FIFO', async () => {
  const secrets = ['id_ecdsa', 'keys/id_dsa', '.envrc', '.git-credentials', '.pgpass', 'Server.PEM', '.ENV', 'cert.p12', 'app.keystore', '.aws/credentials', '.ssh/config', '.kube/config', '.docker/config.json'];
  for (const p of secrets) {
    mkdirSync(join(dir, p, '..'), { recursive: true });
    writeFileSync(join(dir, p), 'secret\n');
  }
  const all = await send(cli.url, '/v1/agent/files', { headers: bearer(cli.token) });
  expect(all.status, all.body).toBe(200);
  expect(all.json.files).toEqual(['README.md']);
  for (const q of ['id_', 'env', 'pem', 'config', 'cred', 'pipe']) {
    expect((await send(cli.url, `/v1/agent/files?q=${q}`, { headers: bearer(cli.token) })).json.files, q).toEqual([]);
  }
});
