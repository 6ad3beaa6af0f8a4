/**
 * The other destructive actions an allowed phone takes are signed too (issue 38): with
 * approvals "device", someone holding a leaked device token (not the phone's key) cannot discard
 * a worktree, merge it, delete a session or change its mode or model. Each is refused
 * 403 agent.signature_required unsigned and 403 agent.bad_signature signed by another key, with
 * nothing done; signed by the phone's key over `deskrelay-<action>:v2\n<session>[\n<id>]\n<issuedAt>` it is
 * taken, once. A relay in this process, a real git project with worktrees, the scripted model.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { agentDevice, newDeviceKey, signAction, type DeviceKey, type TestDevice } from '../helpers/devices';
import { startAgentRelay, type AgentRelay } from './inProcess';
import { gitProject } from './support';

let model: ScriptedModel;
let relay: AgentRelay;
let base: string;
let repo: string;
let configDir: string;
let phone: TestDevice;
let thief: DeviceKey;
let approvals: 'device' | 'token' = 'token';

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-signed-actions-', { 'README.md': '# project\n' }));
  execFileSync('git', ['config', 'user.name', 'Desk User'], { cwd: repo });
  execFileSync('git', ['config', 'user.email', 'desk@example.com'], { cwd: repo });
  configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-signed-actions-cfg-')));
  model = await startScriptedModel();
  relay = await startAgentRelay([repo], model, { configDir, agentHost: { approvals: () => approvals } });
  phone = await agentDevice(relay, 'iPhone Safari');
  thief = await newDeviceKey();
});
afterAll(async () => {
  await relay?.close();
  await model?.close();
  rmSync(base, { recursive: true, force: true });
  rmSync(configDir, { recursive: true, force: true });
});

/** An idle session (a worktree one when asked), made at the desk; from here the phone's rules hold. */
async function idleSession(worktree: boolean): Promise<{ id: string; path?: string }> {
  approvals = 'token';
  model.script([{ text: ['Hello.'] }]);
  const created = await relay.post('/v1/agent/sessions', { prompt: 'Say hello', ...(worktree ? { worktree: true } : {}) });
  expect(created.status, created.body).toBe(201);
  const id = created.json.id as string;
  await relay.until(id, (s) => s.status === 'idle', 'the turn to end');
  approvals = 'device';
  return { id, path: created.json.worktree?.path };
}

/** The request as the leaked token's holder (or the phone) sends it: `signature` made with `key` over the action's string, or none. */
function act(method: 'POST' | 'DELETE', path: string, body: Record<string, unknown>) {
  return send(relay.url, path, { method, headers: { ...bearer(phone.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
}

/** Unsigned and thief-signed: both refused with their codes; `unchanged` checks nothing was done after each. */
async function refusedWithoutTheKey(method: 'POST' | 'DELETE', path: string, action: string, id: string, subject: string[], body: Record<string, unknown>, unchanged: () => Promise<void>) {
  const unsigned = await act(method, path, body);
  expect([unsigned.status, unsigned.json?.error?.code], unsigned.body).toEqual([403, 'agent.signature_required']);
  await unchanged();
  const forged = await act(method, path, { ...body, ...(await signAction(thief, action, id, subject)) });
  expect([forged.status, forged.json?.error?.code], forged.body).toEqual([403, 'agent.bad_signature']);
  await unchanged();
  // The phone's own signature, but for another session: refused as well.
  const elsewhere = await act(method, path, { ...body, ...(await signAction(phone.key, action, 'another-session', subject)) });
  expect(elsewhere.json?.error?.code).toBe('agent.bad_signature');
  await unchanged();
  return act(method, path, { ...body, ...(await signAction(phone.key, action, id, subject)) });
}

const exists = async (id: string) => (await send(relay.url, `/v1/agent/sessions/${id}`, { headers: bearer(phone.token) })).status === 200;

describe('signed session actions (a leaked device token is not enough)', () => {
  it('discard: refused without the phone\'s key (the worktree and session stay); signed, the worktree is gone', async () => {
    const { id, path } = await idleSession(true);
    const signed = await refusedWithoutTheKey('POST', `/v1/agent/sessions/${id}/discard`, 'discard', id, [], {}, async () => {
      expect(existsSync(path!)).toBe(true);
      expect(await exists(id)).toBe(true);
    });
    expect(signed.status, signed.body).toBe(204);
    expect(existsSync(path!)).toBe(false);
  });

  it('merge: refused without the phone\'s key (no card asked); signed, its card waits with the merge line', async () => {
    const { id } = await idleSession(true);
    const pending = async () => (await send(relay.url, `/v1/agent/sessions/${id}`, { headers: bearer(phone.token) })).json.pending as unknown[];
    const signed = await refusedWithoutTheKey('POST', `/v1/agent/sessions/${id}/merge`, 'merge', id, [], {}, async () => expect(await pending()).toEqual([]));
    expect(signed.status, signed.body).toBe(202);
    expect(signed.json.command).toContain('git merge');
    await expect.poll(async () => (await pending()).length).toBe(1);
    await relay.post(`/v1/agent/sessions/${id}/stop`, {}).catch(() => {});
  });

  it('delete: refused without the phone\'s key (the session stays); signed, it is gone', async () => {
    const { id } = await idleSession(false);
    const signed = await refusedWithoutTheKey('DELETE', `/v1/agent/sessions/${id}`, 'delete', id, [], {}, async () => expect(await exists(id)).toBe(true));
    expect(signed.status, signed.body).toBe(204);
    expect(await exists(id)).toBe(false);
  });

  it('mode and model: refused without the phone\'s key; signed over the chosen id, the request reaches the session (DeskRelay\'s own agent offers no modes: 400 from the session, not 403)', async () => {
    const { id } = await idleSession(false);
    for (const what of ['mode', 'model'] as const) {
      const signed = await refusedWithoutTheKey('POST', `/v1/agent/sessions/${id}/${what}`, what, id, ['plan'], { [what]: 'plan' }, async () => {});
      expect(signed.status, `${what}: ${signed.body}`).toBe(400);
      expect(signed.json.error.code).toBe('request.invalid_body');
      // Signed for another id than the one sent: refused.
      const swapped = await act('POST', `/v1/agent/sessions/${id}/${what}`, { [what]: 'code', ...(await signAction(phone.key, what, id, ['plan'])) });
      expect(swapped.json.error.code).toBe('agent.bad_signature');
    }
  });

  it('a signed action is taken once: the same request sent again, one signed 10 minutes ago, or one without issuedAt does nothing', async () => {
    const { id } = await idleSession(false);
    const body = { mode: 'plan', ...(await signAction(phone.key, 'mode', id, ['plan'])) };
    const first = await act('POST', `/v1/agent/sessions/${id}/mode`, body);
    expect(first.json.error.code, first.body).toBe('request.invalid_body'); // reached the session (it offers no modes)
    const replayed = await act('POST', `/v1/agent/sessions/${id}/mode`, body);
    expect([replayed.status, replayed.json.error.code], replayed.body).toEqual([403, 'agent.bad_signature']);
    expect(replayed.json.error.message).toContain('sent before');
    const stale = await act('POST', `/v1/agent/sessions/${id}/mode`, { mode: 'plan', ...(await signAction(phone.key, 'mode', id, ['plan'], new Date(Date.now() - 10 * 60_000).toISOString())) });
    expect([stale.status, stale.json.error.code], stale.body).toEqual([403, 'agent.bad_signature']);
    const { signature } = await signAction(phone.key, 'mode', id, ['plan']);
    const bare = await act('POST', `/v1/agent/sessions/${id}/mode`, { mode: 'plan', signature });
    expect([bare.status, bare.json.error.code], bare.body).toEqual([400, 'request.invalid_body']);
  });

  it('with "approvals": "token", the same actions need no signature', async () => {
    const { id } = await idleSession(false);
    approvals = 'token';
    expect((await act('DELETE', `/v1/agent/sessions/${id}`, {})).status).toBe(204);
  });
});
