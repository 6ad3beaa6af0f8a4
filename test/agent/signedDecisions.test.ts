/**
 * Signed decisions (issue 36): with approvals "device", a decision runs only when it carries the
 * deciding device's ECDSA P-256 signature (node's WebCrypto here, as the phone's browser makes
 * it) over this session, this call, this decision and the digest of what the card shows.
 * Everything else is refused with its code and nothing runs. A relay in this process, a real
 * NodeWorkspace on a git project, the scripted OpenAI-compatible model asking to run a command.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { agentDevice, decideAs, newDeviceKey, registerDevice, type TestDevice } from '../helpers/devices';
import { Follower, gitProject } from './support';
import { NodeWorkspace } from '../../server/src/agent';

let model: ScriptedModel;
let t: TestRelay;
let base: string;
let repo: string;
let phone: TestDevice;
let approvals: 'device' | 'token' = 'device';

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-signed-', { 'README.md': '# project\n' }));
  model = await startScriptedModel();
  const workspace = new NodeWorkspace({ folder: repo, name: 'project', configDir: join(base, 'config') });
  t = await startRelay({ agent: { workspaces: () => [workspace], approvals: () => approvals } });
  t.useProvider({ id: 'scripted', kind: 'openai-compatible', baseUrl: `${model.url}/v1`, model: 'gpt-4o' });
  phone = await agentDevice(t, 'iPhone Safari');
});
afterAll(async () => {
  await t?.close();
  await model?.close();
  rmSync(base, { recursive: true, force: true });
});

/** A session whose model asks to run `touch <marker>`: the approval waiting, and the marker's path. */
async function waitingCommand(marker: string) {
  model.script([{ calls: [{ name: 'run_command', arguments: { command: `touch ${marker}` } }] }, { text: ['done'] }]);
  const created = await send(t.url, '/v1/agent/sessions', { method: 'POST', headers: { ...bearer(phone.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'Touch it' }) });
  expect(created.status, created.body).toBe(201);
  const id = created.json.id as string;
  const events = new Follower(t.url, phone.token, `/v1/agent/sessions/${id}/events`);
  await events.waitFor((f) => f.of('approval').length === 1, 'the approval');
  const approval = events.of('approval')[0];
  return { id, events, approval, ran: () => existsSync(join(repo, marker)) };
}

/** The call still waits and its command did not run. */
async function nothingDecided(s: Awaited<ReturnType<typeof waitingCommand>>) {
  const snapshot = await send(t.url, `/v1/agent/sessions/${s.id}`, { headers: bearer(phone.token) });
  expect(snapshot.json.pending.map((p: any) => p.callId)).toEqual([s.approval.callId]);
  expect(s.events.of('decision')).toEqual([]);
  expect(s.ran()).toBe(false);
}

describe('signed decisions', () => {
  it('refuses, with its code and nothing run: unsigned, garbage, for another call, another decision, another card, another session, another device\'s key, a device not allowed, the pairing token', async () => {
    const s = await waitingCommand('refused.txt');
    const post = (token: string, body: unknown) =>
      send(t.url, `/v1/agent/sessions/${s.id}/approvals/${s.approval.callId}`, { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const code = (reply: { json: any }) => reply.json?.error?.code;

    expect(code(await post(phone.token, { decision: 'allow' }))).toBe('agent.signature_required');
    await nothingDecided(s);
    expect(code(await post(phone.token, { decision: 'allow', signature: 'A'.repeat(86) }))).toBe('agent.bad_signature');
    expect(code(await post(phone.token, { decision: 'allow', signature: 'not base64url!' }))).toBe('agent.bad_signature');
    const refusals = {
      anotherCall: await decideAs(t, phone, s.id, s.approval.callId, 'allow', { callId: 'c999' }),
      anotherDecision: await decideAs(t, phone, s.id, s.approval.callId, 'allow', { decision: 'deny' }),
      anotherCard: await decideAs(t, phone, s.id, s.approval.callId, 'allow', { digest: '0'.repeat(64) }),
      anotherSession: await decideAs(t, phone, s.id, s.approval.callId, 'allow', { sessionId: 'another-session' }),
      anotherKey: await decideAs(t, phone, s.id, s.approval.callId, 'allow', { key: await newDeviceKey() }),
    };
    for (const [why, reply] of Object.entries(refusals)) {
      expect(reply.status, why).toBe(403);
      expect(code(reply), why).toBe('agent.bad_signature');
    }
    await nothingDecided(s);

    // A device the desk has not allowed, signing correctly with its own key.
    const stranger = await registerDevice(t, 'Stranger');
    expect(code(await decideAs(t, stranger, s.id, s.approval.callId, 'allow'))).toBe('agent.device_not_allowed');
    // The pairing token never reaches the agent, signed or not.
    expect(code(await post(t.token, { decision: 'allow', signature: 'A'.repeat(86) }))).toBe('agent.device_not_allowed');
    await nothingDecided(s);

    // Correctly signed by the allowed phone: it runs.
    const allowed = await decideAs(t, phone, s.id, s.approval.callId, 'allow');
    expect(allowed.status, allowed.body).toBe(204);
    await s.events.waitStatus('idle');
    expect(s.ran()).toBe(true);
    expect(s.events.of('decision')).toEqual([{ type: 'decision', callId: s.approval.callId, decision: 'allow' }]);
    // A signature once used decides nothing more.
    expect((await decideAs(t, phone, s.id, s.approval.callId, 'allow')).status).toBe(409);
    s.events.close();
  }, 30_000);

  it('a signed deny is a deny; with approvals "token" an unsigned decision is taken as before', async () => {
    const denied = await waitingCommand('denied.txt');
    expect((await decideAs(t, phone, denied.id, denied.approval.callId, 'deny')).status).toBe(204);
    await denied.events.waitStatus('idle');
    expect(denied.ran()).toBe(false);
    denied.events.close();

    approvals = 'token';
    try {
      const s = await waitingCommand('unsigned.txt');
      const reply = await send(t.url, `/v1/agent/sessions/${s.id}/approvals/${s.approval.callId}`, {
        method: 'POST',
        headers: { ...bearer(t.token), 'Content-Type': 'application/json' },
        body: JSON.stringify({ decision: 'allow' }),
      });
      expect(reply.status, reply.body).toBe(204);
      await s.events.waitStatus('idle');
      expect(s.ran()).toBe(true);
      s.events.close();
    } finally {
      approvals = 'device';
    }
  }, 30_000);
});
