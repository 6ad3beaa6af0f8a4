/**
 * A kept session's Changes survive a relay restart (issue 38 item 9 with issue 40's
 * keepConversations): the list comes back the same, a signed Undo restores the bytes, a file
 * changed outside during the restart is refused; a damaged changes record is set aside and the
 * session still loads; contents past the session's cap are listed but not undoable; without the
 * opt-in nothing is written. A relay in this process over a real git folder, the scripted model.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import { SessionChanges } from '../../server/src/agent/changes';
import { AgentSessionKeep } from '../../server/src/store/agentSessions';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { agentDevice, signAction } from '../helpers/devices';
import { startAgentRelay, type AgentRelay } from './inProcess';
import { changingSession as sharedChangingSession, ORIGINAL } from './changingSession';
import { gitProject, waitUntil } from './support';

let model: ScriptedModel;
let base: string;
let repo: string;
let configDir: string;
let approvals: 'device' | 'token' = 'token';
const open: AgentRelay[] = [];
const sessionsDir = () => join(configDir, 'agent-sessions');
const read = (path: string) => readFileSync(join(repo, path), 'utf8');

const relayAt = async (keepConversations = () => true) => {
  const r = await startAgentRelay([repo], model, { configDir, keepConversations, agentHost: { approvals: () => approvals } });
  open.push(r);
  return r;
};
const restart = async (r: AgentRelay) => {
  await r.close();
  open.splice(open.indexOf(r), 1);
};

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-changes-kept-', ORIGINAL));
  model = await startScriptedModel();
});
afterEach(async () => {
  for (const r of open.splice(0)) await r.close().catch(() => {});
  rmSync(configDir, { recursive: true, force: true });
  approvals = 'token';
});
afterAll(async () => {
  await model?.close();
  rmSync(base, { recursive: true, force: true });
});

const changingSession = (relay: AgentRelay) => sharedChangingSession(relay, model, repo);

const changesOf = async (relay: AgentRelay, id: string, token = relay.token) => {
  const reply = await send(relay.url, `/v1/agent/sessions/${id}/changes`, { headers: bearer(token) });
  expect(reply.status, reply.body).toBe(200);
  return reply.json as { files: { path: string; kind: string; diff: string; digest: string; changedOutside: boolean; notUndoable?: string }[]; diff: string };
};

describe('a kept session\'s changes', () => {
  it('after a restart: the same list (paths, kinds, digests), a signed Undo restores the bytes, a file changed outside meanwhile is refused; Delete removes them', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-changes-kept-cfg-')));
    const first = await relayAt();
    const id = await changingSession(first);
    const before = await changesOf(first, id);
    expect(before.files.map((f) => [f.path, f.kind])).toEqual([['README.md', 'modified'], ['src/math.js', 'modified'], ['src/new.js', 'created']]);
    await restart(first);
    for (const name of readdirSync(sessionsDir())) expect(statSync(join(sessionsDir(), name)).mode & 0o777, name).toBe(0o600);
    // Changed at the desk while the relay was down.
    writeFileSync(join(repo, 'README.md'), '# project\n\nNew words.\nMine, added at the desk.\n');

    approvals = 'device';
    const second = await relayAt();
    const phone = await agentDevice(second, 'iPhone Safari');
    const after = await changesOf(second, id, phone.token);
    expect(after.files.map((f) => [f.path, f.kind, f.digest, f.diff])).toEqual(before.files.map((f) => [f.path, f.kind, f.digest, f.diff]));
    expect(after.files.map((f) => f.changedOutside)).toEqual([true, false, false]);

    const undo = async (path: string) => {
      const digest = after.files.find((f) => f.path === path)!.digest;
      const signed = await signAction(phone.key, 'undo', id, [path, digest]);
      return send(second.url, `/v1/agent/sessions/${id}/changes/undo`, { method: 'POST', headers: { ...bearer(phone.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ path, digest, ...signed }) });
    };
    const done = await undo('src/math.js');
    expect(done.status, done.body).toBe(200);
    expect(read('src/math.js')).toBe(ORIGINAL['src/math.js']);
    expect((await undo('src/new.js')).status).toBe(200);
    expect(existsSync(join(repo, 'src/new.js'))).toBe(false);
    const refused = await undo('README.md');
    expect([refused.status, refused.json.error.code]).toEqual([409, 'agent.changed_outside']);
    expect(read('README.md')).toBe('# project\n\nNew words.\nMine, added at the desk.\n');

    // What was undone stays undone across the next restart.
    await waitUntil(() => !readFileSync(join(sessionsDir(), `${id}.changes.json`), 'utf8').includes('src/new.js'), () => 'the undo saved');
    await restart(second);
    approvals = 'token';
    const third = await relayAt();
    expect((await changesOf(third, id)).files.map((f) => f.path)).toEqual(['README.md']);
    expect((await send(third.url, `/v1/agent/sessions/${id}`, { method: 'DELETE', headers: bearer(third.token) })).status).toBe(204);
    await waitUntil(() => readdirSync(sessionsDir()).length === 0, () => `the files to go: ${readdirSync(sessionsDir()).join(', ')}`);
  });

  it('a damaged changes record is set aside with a warning; the session still loads, with no changes listed', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-changes-kept-cfg-')));
    const first = await relayAt();
    const id = await changingSession(first);
    await restart(first);
    const file = join(sessionsDir(), `${id}.changes.json`);
    writeFileSync(file, readFileSync(file, 'utf8').slice(0, 30));

    const second = await relayAt();
    expect((await changesOf(second, id))).toEqual({ files: [], diff: '' });
    expect((await second.get(`/v1/agent/sessions/${id}`)).json.transcript[0]).toEqual({ role: 'user', text: 'Fix add and add two' });
    expect(readdirSync(sessionsDir()).sort()).toEqual([`${id}.changes.json.damaged`, `${id}.json`]);
    expect(second.logLines.some((l) => l.startsWith('warn') && l.includes(`${id}.changes.json could not be read`))).toBe(true);
  });

  it('a session file found damaged when opened goes aside with its changes record: nothing is left that no session reads', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-changes-kept-cfg-')));
    const first = await relayAt();
    const id = await changingSession(first);
    await restart(first);
    // Its end cut off: the summary at its start still lists it, so it is found damaged when opened.
    const file = join(sessionsDir(), `${id}.json`);
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.slice(0, text.length - 40));

    const second = await relayAt();
    expect((await second.get(`/v1/agent/sessions/${id}`)).status).toBe(404);
    expect(readdirSync(sessionsDir()).sort()).toEqual([`${id}.changes.json.damaged`, `${id}.json.damaged`]);
  });

  it('without keepConversations nothing lands on disk', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-changes-kept-cfg-')));
    const relay = await relayAt(() => false);
    const id = await changingSession(relay);
    expect((await changesOf(relay, id)).files).toHaveLength(3);
    await restart(relay);
    expect(existsSync(sessionsDir()) ? readdirSync(sessionsDir()) : []).toEqual([]);
  });

  it('contents past the session\'s cap are left out: listed after a restart with a plain reason, and Undo refuses', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-changes-kept-cfg-')));
    const logger = { info: () => {}, warn: () => {}, error: () => {} };
    const id = '0123abcd-0000-4000-8000-000000000000';
    const folder = new NodeWorkspace({ folder: repo, configDir });
    writeFileSync(join(repo, 'small.txt'), 'small\n');
    writeFileSync(join(repo, 'big.txt'), 'b'.repeat(10_000));
    const { keep } = await AgentSessionKeep.open(sessionsDir(), logger, { bytes: 8_000 });
    const kept = (k: AgentSessionKeep) => ({ load: () => k.loadChanges(id), save: (files: Parameters<AgentSessionKeep['saveChanges']>[1]) => k.saveChanges(id, files) });
    const first = new SessionChanges(folder, kept(keep));
    await first.workspace.writeFile('small.txt', 'smaller\n');
    await first.workspace.writeFile('big.txt', 'c'.repeat(10_000));
    await keep.close();

    const { keep: again } = await AgentSessionKeep.open(sessionsDir(), logger, { bytes: 8_000 });
    const second = new SessionChanges(folder, kept(again));
    const listed = await second.list();
    expect(listed.map((f) => [f.path, f.kind, f.changedOutside, f.notUndoable])).toEqual([
      ['small.txt', 'modified', false, undefined],
      ['big.txt', 'modified', false, expect.stringContaining('too large to keep on the desktop across a restart')],
    ]);
    await expect(second.undo('big.txt', listed[1]!.digest)).rejects.toThrow(/too large to keep/);
    expect(read('big.txt')).toBe('c'.repeat(10_000));
    await second.undo('small.txt', listed[0]!.digest);
    expect(read('small.txt')).toBe('small\n');
    rmSync(join(repo, 'small.txt'));
    rmSync(join(repo, 'big.txt'));
  });
});
