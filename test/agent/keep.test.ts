/**
 * Agent sessions kept on the desktop (issue 40, with keepConversations): a restart of the relay
 * lists every session idle (a running turn marked interrupted, a waiting approval denied with a
 * note), a follow-up continues with the earlier conversation sent to the model, a damaged file
 * is set aside and the rest load, Delete removes the file; without the opt-in nothing is kept.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { startAgentRelay, type AgentRelay } from './inProcess';
import { Follower, waitUntil } from './support';

let model: ScriptedModel;
let folder: string;
let configDir: string;
const open: AgentRelay[] = [];
const keep = () => true;
const relayAt = async (keepConversations = keep) => {
  const r = await startAgentRelay([folder], model, { configDir, keepConversations });
  open.push(r);
  return r;
};
const sessionsDir = () => join(configDir, 'agent-sessions');

beforeAll(async () => {
  folder = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-keep-')));
  writeFileSync(join(folder, 'a.txt'), 'alpha\n');
  model = await startScriptedModel();
});
afterEach(async () => {
  for (const r of open.splice(0)) await r.close().catch(() => {});
  rmSync(configDir, { recursive: true, force: true });
  model.script([]);
  model.failures.length = 0;
});
afterAll(async () => {
  await model.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('sessions kept on the desktop', () => {
  it('after a restart: one mid-turn and one waiting are listed idle, interrupted and denied; a follow-up continues with the earlier transcript', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-keep-cfg-')));
    const first = await relayAt();
    // A: the model is still streaming when the relay stops. B: an approval waits.
    model.script([{ text: ['Thinking', ' slowly'], paceMs: 60_000 }, { calls: [{ name: 'write_file', arguments: { path: 'b.txt', content: 'beta\n' } }] }]);
    const a = await first.start('Prompt A: think');
    await first.until(a, () => model.served === 1, 'A to be answering');
    const b = await first.start('Prompt B: write b.txt');
    const waiting = await first.until(b, (s) => s.pending.length === 1, 'B to wait');
    expect((await first.get(`/v1/agent/sessions/${a}`)).json.status).toBe('running');
    await first.close();
    open.splice(0);

    expect(statSync(sessionsDir()).mode & 0o777).toBe(0o700);
    for (const name of readdirSync(sessionsDir())) expect(statSync(join(sessionsDir(), name)).mode & 0o777, name).toBe(0o600);

    const second = await relayAt();
    const listed = (await second.get('/v1/agent/sessions')).json.sessions;
    expect(listed.map((s: any) => [s.id, s.status, s.pending]).sort()).toEqual([[a, 'idle', 0], [b, 'idle', 0]].sort());
    const snapA = (await second.get(`/v1/agent/sessions/${a}`)).json;
    expect(snapA.transcript[0]).toEqual({ role: 'user', text: 'Prompt A: think' });
    // A's events replay as they were, then say the turn was interrupted.
    const eventsA = new Follower(second.url, second.token, `/v1/agent/sessions/${a}/events`);
    await eventsA.waitFor((f) => f.of('status').at(-1)?.status === 'idle', "A's replay");
    eventsA.close();
    expect(eventsA.of('user')).toEqual([{ type: 'user', text: 'Prompt A: think' }]);
    expect(eventsA.of('error').at(-1).message).toContain('restarted while this turn ran: it was interrupted');
    expect(eventsA.events.map((e) => e.id)).toEqual(eventsA.events.map((_, i) => i + 1));
    const snapB = (await second.get(`/v1/agent/sessions/${b}`)).json;
    expect(snapB.transcript.at(-1)).toMatchObject({ role: 'tool', callId: waiting.pending[0].callId, denied: true, output: expect.stringContaining('restarted while this approval waited') });

    // The follow-up: the model gets the earlier conversation, the waited call answered.
    let seen: any[] = [];
    model.script([{ check: (body) => void (seen = body.messages), text: ['Going on.'] }]);
    expect((await second.post(`/v1/agent/sessions/${b}/messages`, { text: 'Go on without writing' })).status).toBe(202);
    const after = await second.until(b, (s) => s.status === 'idle' && s.transcript.at(-1).role === 'assistant', 'the follow-up');
    expect(model.failures).toEqual([]);
    expect(seen.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(seen[1].content).toBe('Prompt B: write b.txt');
    expect(seen[2].tool_calls[0].function.name).toBe('write_file');
    expect(seen[3].content).toContain('restarted');
    expect(seen[4].content).toBe('Go on without writing');
    expect(after.transcript.at(-1).text).toBe('Going on.');
  });

  it('loaded lazily: the list comes from each file\'s summary, a session\'s events are read on first use; a truncated file is set aside with a warning when opened, the others load', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-keep-cfg-')));
    const first = await relayAt();
    model.script([{ text: ['One.'] }, { text: ['Two.'] }, { text: ['Three.'] }]);
    const ids: string[] = [];
    for (const prompt of ['first', 'second', 'third']) {
      const id = await first.start(prompt);
      await first.until(id, (s) => s.status === 'idle', `${prompt} idle`);
      ids.push(id);
    }
    const [one, two, three] = ids as [string, string, string];
    await first.close();
    open.splice(0);
    // two: its end cut off (the summary at its start intact); three: cut inside its summary.
    const file = (id: string) => join(sessionsDir(), `${id}.json`);
    const text = readFileSync(file(two), 'utf8');
    writeFileSync(file(two), text.slice(0, text.length - 40));
    writeFileSync(file(three), readFileSync(file(three), 'utf8').slice(0, 10));

    const second = await relayAt();
    const listed = (await second.get('/v1/agent/sessions')).json.sessions;
    expect(listed.map((s: any) => [s.id, s.title, s.status]).sort()).toEqual([[one, 'first', 'idle'], [two, 'second', 'idle']].sort());
    expect(readdirSync(sessionsDir()).sort()).toEqual([`${one}.json`, `${two}.json`, `${three}.json.damaged`].sort());
    // One's events are served; two's file has not been read whole (still in place, no warning).
    const events = new Follower(second.url, second.token, `/v1/agent/sessions/${one}/events`);
    await events.waitFor((f) => f.of('text').length > 0, "one's replay");
    events.close();
    expect(events.of('user')).toEqual([{ type: 'user', text: 'first' }]);
    expect(existsSync(file(two))).toBe(true);
    expect(second.logLines.some((l) => l.includes(`${two}.json could not be read`))).toBe(false);
    // Opened, two is found damaged: set aside with a warning, gone from the list.
    expect((await second.get(`/v1/agent/sessions/${two}`)).status).toBe(404);
    expect(readdirSync(sessionsDir()).sort()).toEqual([`${one}.json`, `${two}.json.damaged`, `${three}.json.damaged`].sort());
    expect(second.logLines.some((l) => l.startsWith('warn') && l.includes(`${two}.json could not be read`))).toBe(true);
    expect((await second.get('/v1/agent/sessions')).json.sessions.map((s: any) => s.id)).toEqual([one]);
  });

  it('a kept file naming a worktree outside the config folder\'s worktrees/ is not followed', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-keep-cfg-')));
    const first = await relayAt();
    model.script([{ text: ['One.'] }]);
    const id = await first.start('first');
    await first.until(id, (s) => s.status === 'idle', 'idle');
    await first.close();
    open.splice(0);
    const file = join(sessionsDir(), `${id}.json`);
    // A worktree session whose "worktree" is the project itself (or anywhere else): refused.
    const worktree = { path: folder, branch: 'deskrelay/x', project: folder };
    const lines = readFileSync(file, 'utf8').split('\n').map((line) => JSON.stringify({ ...JSON.parse(line), worktree }));
    writeFileSync(file, lines.join('\n'));
    const second = await relayAt();
    expect((await second.get('/v1/agent/sessions')).json.sessions).toEqual([]);
  });

  it('Delete removes the session from disk; without the opt-in nothing is kept', async () => {
    configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-keep-cfg-')));
    const kept = await relayAt();
    model.script([{ text: ['Hi.'] }]);
    const id = await kept.start('hello');
    await kept.until(id, (s) => s.status === 'idle', 'idle');
    await waitUntil(() => existsSync(join(sessionsDir(), `${id}.json`)), () => 'the session file');
    const del = await send(kept.url, `/v1/agent/sessions/${id}`, { method: 'DELETE', headers: bearer(kept.token) });
    expect(del.status).toBe(204);
    await waitUntil(() => readdirSync(sessionsDir()).length === 0, () => `the file to go: ${readdirSync(sessionsDir()).join(', ')}`);
    await kept.close();
    open.splice(0);

    const plain = await relayAt(() => false);
    model.script([{ text: ['Hi.'] }]);
    const gone = await plain.start('not kept');
    await plain.until(gone, (s) => s.status === 'idle', 'idle');
    await plain.close();
    open.splice(0);
    expect(readdirSync(sessionsDir())).toEqual([]);
    const again = await relayAt(() => false);
    expect((await again.get('/v1/agent/sessions')).json.sessions).toEqual([]);
  });
});
