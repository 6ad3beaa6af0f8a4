/**
 * A session's changes on the phone (issue 38 item 9): `GET …/changes` lists every file the
 * session changed with its combined diff; `POST …/changes/undo` puts one back as it was before
 * the session's first change to it (a file it made is removed), signed by the allowed device's
 * key like a decision, and refused 409 agent.changed_outside once the file changed outside the
 * session. A relay in this process, real NodeWorkspaces on a git project, the scripted model.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { agentDevice, newDeviceKey, signAction, type TestDevice } from '../helpers/devices';
import { startAgentRelay, type AgentRelay } from './inProcess';
import { changingSession as sharedChangingSession, ORIGINAL } from './changingSession';
import { Follower, gitProject } from './support';

let model: ScriptedModel;
let relay: AgentRelay;
let base: string;
let repo: string;
let phone: TestDevice;
let approvals: 'device' | 'token' = 'token';

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-changes-', ORIGINAL));
  model = await startScriptedModel();
  relay = await startAgentRelay([repo], model, { agentHost: { approvals: () => approvals } });
  phone = await agentDevice(relay, 'iPhone Safari');
});
afterAll(async () => {
  await relay?.close();
  await model?.close();
  rmSync(base, { recursive: true, force: true });
});

/** The shared changing session, decided at the desk (token approvals), then the phone's rules. */
async function changingSession(): Promise<string> {
  approvals = 'token';
  const id = await sharedChangingSession(relay, model, repo);
  approvals = 'device';
  return id;
}

const asPhone = (path: string, body?: unknown) =>
  send(relay.url, path, body === undefined ? { headers: bearer(phone.token) } : { method: 'POST', headers: { ...bearer(phone.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

async function undo(id: string, path: string, sign: { key?: Awaited<ReturnType<typeof newDeviceKey>>; digest?: string; unsigned?: boolean } = {}) {
  const listed = (await asPhone(`/v1/agent/sessions/${id}/changes`)).json.files.find((f: any) => f.path === path);
  const digest = listed?.digest ?? '0'.repeat(64);
  const signed = sign.unsigned ? {} : await signAction(sign.key ?? phone.key, 'undo', id, [path, sign.digest ?? digest]);
  return asPhone(`/v1/agent/sessions/${id}/changes/undo`, { path, digest, ...signed });
}

const read = (path: string) => readFileSync(join(repo, path), 'utf8');

describe('the changes view', () => {
  it('lists every file the session changed, each with its diff and digest, and the combined diff', async () => {
    const id = await changingSession();
    const reply = await asPhone(`/v1/agent/sessions/${id}/changes`);
    expect(reply.status, reply.body).toBe(200);
    const files = reply.json.files as { path: string; kind: string; diff: string; digest: string; changedOutside: boolean }[];
    expect(files.map((f) => [f.path, f.kind, f.changedOutside])).toEqual([
      ['README.md', 'modified', false],
      ['src/math.js', 'modified', false],
      ['src/new.js', 'created', false],
    ]);
    expect(files[0]!.diff).toContain('-First words.\n+New words.\n');
    expect(files[2]!.diff).toBe('--- /dev/null\n+++ b/src/new.js\n@@ -0,0 +1,1 @@\n+export const two = 2;\n');
    for (const f of files) expect(f.digest).toBe(createHash('sha256').update(f.diff, 'utf8').digest('hex'));
    expect(reply.json.diff).toBe(files.map((f) => f.diff).join(''));
    await send(relay.url, `/v1/agent/sessions/${id}`, { method: 'DELETE', headers: bearer(relay.token) }).catch(() => {});
  });

  it('Undo is refused unsigned, signed by another key or over another diff (nothing changed); signed, it restores the bytes, removes a made file, marks the edits reverted and updates the list', async () => {
    const id = await changingSession();
    const events = new Follower(relay.url, phone.token, `/v1/agent/sessions/${id}/events`);
    try {
      const unsigned = await undo(id, 'src/math.js', { unsigned: true });
      expect([unsigned.status, unsigned.json.error.code]).toEqual([403, 'agent.signature_required']);
      const otherKey = await undo(id, 'src/math.js', { key: await newDeviceKey() });
      expect([otherKey.status, otherKey.json.error.code]).toEqual([403, 'agent.bad_signature']);
      const otherDiff = await undo(id, 'src/math.js', { digest: 'f'.repeat(64) });
      expect([otherDiff.status, otherDiff.json.error.code]).toEqual([403, 'agent.bad_signature']);
      expect(read('src/math.js')).toBe('export const add = (a, b) => a + b;\n');

      const done = await undo(id, 'src/math.js');
      expect(done.status, done.body).toBe(200);
      expect(read('src/math.js')).toBe(ORIGINAL['src/math.js']);
      expect(done.json.files.map((f: any) => f.path)).toEqual(['README.md', 'src/new.js']);
      await events.waitFor((f) => f.of('reverted').some((e: any) => e.path === 'src/math.js'), 'the reverted event');

      expect((await undo(id, 'src/new.js')).status).toBe(200);
      expect(existsSync(join(repo, 'src/new.js'))).toBe(false);
      const again = await undo(id, 'src/new.js');
      expect([again.status, again.json.error.code]).toEqual([404, 'agent.not_found']);
      expect((await undo(id, 'README.md')).status).toBe(200);
      expect(read('README.md')).toBe(ORIGINAL['README.md']);
      expect((await asPhone(`/v1/agent/sessions/${id}/changes`)).json).toEqual({ files: [], diff: '' });
    } finally {
      events.close();
    }
  });

  it('Undo of a file changed outside the session since its last change is refused 409 agent.changed_outside, and the file keeps what was written', async () => {
    const id = await changingSession();
    writeFileSync(join(repo, 'README.md'), '# project\n\nNew words.\nMine, added at the desk.\n');
    const listed = (await asPhone(`/v1/agent/sessions/${id}/changes`)).json.files.find((f: any) => f.path === 'README.md');
    expect(listed.changedOutside).toBe(true);
    const refused = await undo(id, 'README.md');
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe('agent.changed_outside');
    expect(refused.json.error.message).toContain('README.md changed since the session\'s last change to it');
    expect(read('README.md')).toBe('# project\n\nNew words.\nMine, added at the desk.\n');
  });

  it('with "approvals": "token", an unsigned Undo is taken', async () => {
    const id = await changingSession();
    approvals = 'token';
    const listed = (await relay.get(`/v1/agent/sessions/${id}/changes`)).json.files.find((f: any) => f.path === 'src/math.js');
    const reply = await relay.post(`/v1/agent/sessions/${id}/changes/undo`, { path: 'src/math.js', digest: listed.digest });
    expect(reply.status, reply.body).toBe(200);
    expect(read('src/math.js')).toBe(ORIGINAL['src/math.js']);
  });
});
