/**
 * What an approved command changed is in the session's Changes (issue 38 item 9) when the folder
 * is a git work tree: a file it rewrote, made or deleted, listed with its diff and undone like a
 * write; never a denied file (`.env`), whose contents appear nowhere. In a folder without git,
 * the command runs and nothing is listed. A relay in this process, real NodeWorkspaces, real
 * commands, the scripted model.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { agentDevice, signAction, type TestDevice } from '../helpers/devices';
import { startAgentRelay, type AgentRelay } from './inProcess';
import { gitProject } from './support';

const ORIGINAL = { 'README.md': '# project\n\nFirst words.\n', 'src/math.js': 'export const add = (a, b) => a - b;\n', 'old.txt': 'old words\n' };
const SECRET = 'SECRET_VALUE_4711';

let model: ScriptedModel;
let relay: AgentRelay;
let base: string;
let repo: string;
let plainBase: string;
let plain: string;
let phone: TestDevice;
let approvals: 'device' | 'token' = 'token';

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-cmdchanges-', ORIGINAL));
  plainBase = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-cmdplain-')));
  plain = join(plainBase, 'plain');
  mkdirSync(plain);
  writeFileSync(join(plain, 'a.txt'), 'one\n');
  model = await startScriptedModel();
  relay = await startAgentRelay([repo, plain], model, { agentHost: { approvals: () => approvals } });
  phone = await agentDevice(relay, 'iPhone Safari');
});
afterAll(async () => {
  await relay?.close();
  await model?.close();
  rmSync(base, { recursive: true, force: true });
  rmSync(plainBase, { recursive: true, force: true });
});

/** A session in `folder` whose one command the desk allowed; its id once the turn ended. */
async function commandSession(folder: string, command: string): Promise<string> {
  approvals = 'token';
  model.script([{ calls: [{ name: 'run_command', arguments: { command } }] }, { text: ['Done.'] }]);
  const id = await relay.start('Run it', { folder });
  const waiting = await relay.until(id, (s) => s.pending.length === 1, 'the approval');
  expect((await relay.post(`/v1/agent/sessions/${id}/approvals/${waiting.pending[0].callId}`, { decision: 'allow' })).status).toBe(204);
  await relay.until(id, (s) => s.status === 'idle', 'the turn to end');
  expect(model.failures).toEqual([]);
  approvals = 'device';
  return id;
}

const asPhone = (path: string, body?: unknown) =>
  send(relay.url, path, body === undefined ? { headers: bearer(phone.token) } : { method: 'POST', headers: { ...bearer(phone.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

async function undo(id: string, path: string) {
  const listed = (await asPhone(`/v1/agent/sessions/${id}/changes`)).json.files.find((f: any) => f.path === path);
  expect(listed, path).toBeDefined();
  return asPhone(`/v1/agent/sessions/${id}/changes/undo`, { path, digest: listed.digest, ...(await signAction(phone.key, 'undo', id, [path, listed.digest])) });
}

const read = (path: string) => readFileSync(join(repo, path));

describe('what a command changed', () => {
  it('in a git folder, a file the command rewrote and one it made are listed with their diffs, and a signed Undo puts each back', async () => {
    const id = await commandSession('project', "sed -i 's/a - b/a + b/' src/math.js && printf 'made\\n' > src/made.txt");
    expect(readFileSync(join(repo, 'src/math.js'), 'utf8')).toBe('export const add = (a, b) => a + b;\n');
    const reply = await asPhone(`/v1/agent/sessions/${id}/changes`);
    expect(reply.status, reply.body).toBe(200);
    const files = reply.json.files as { path: string; kind: string; diff: string; changedOutside: boolean }[];
    expect(files.map((f) => [f.path, f.kind, f.changedOutside]).sort()).toEqual([
      ['src/made.txt', 'created', false],
      ['src/math.js', 'modified', false],
    ]);
    expect(files.find((f) => f.path === 'src/math.js')!.diff).toContain('-export const add = (a, b) => a - b;\n+export const add = (a, b) => a + b;\n');
    expect(files.find((f) => f.path === 'src/made.txt')!.diff).toBe('--- /dev/null\n+++ b/src/made.txt\n@@ -0,0 +1,1 @@\n+made\n');

    const back = await undo(id, 'src/math.js');
    expect(back.status, back.body).toBe(200);
    expect(read('src/math.js').equals(Buffer.from(ORIGINAL['src/math.js']))).toBe(true);
    expect((await undo(id, 'src/made.txt')).status).toBe(200);
    expect(existsSync(join(repo, 'src/made.txt'))).toBe(false);
    expect((await asPhone(`/v1/agent/sessions/${id}/changes`)).json).toEqual({ files: [], diff: '' });
  });

  it('a denied file the command wrote (.env) is not listed and its contents appear nowhere; a file it deleted is listed as deleted', async () => {
    const id = await commandSession('project', `printf '${SECRET}\\n' > .env && rm old.txt`);
    expect(readFileSync(join(repo, '.env'), 'utf8')).toBe(`${SECRET}\n`);
    const reply = await asPhone(`/v1/agent/sessions/${id}/changes`);
    expect(reply.status, reply.body).toBe(200);
    expect(reply.json.files.map((f: any) => [f.path, f.kind])).toEqual([['old.txt', 'deleted']]);
    expect(reply.json.files[0].diff).toContain('-old words\n');
    expect(reply.body).not.toContain(SECRET);
    expect(reply.body).not.toContain('.env');
    expect((await undo(id, 'old.txt')).status).toBe(200);
    expect(readFileSync(join(repo, 'old.txt'), 'utf8')).toBe(ORIGINAL['old.txt']);
    rmSync(join(repo, '.env'));
  });

  it('in a folder without git, the command runs and nothing is listed', async () => {
    const id = await commandSession('plain', "printf 'two\\n' > a.txt && printf 'b\\n' > b.txt");
    expect(readFileSync(join(plain, 'b.txt'), 'utf8')).toBe('b\n');
    const snap = (await asPhone(`/v1/agent/sessions/${id}`)).json;
    expect(JSON.stringify(snap)).toContain('Exit code 0.');
    const reply = await asPhone(`/v1/agent/sessions/${id}/changes`);
    expect(reply.status, reply.body).toBe(200);
    expect(reply.json).toEqual({ files: [], diff: '' });
  });
});
