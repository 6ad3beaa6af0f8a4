/**
 * The agent's pushes (issue 23) from the real CLI: an approval waiting with nobody attached to
 * the session's events pushes `agent_needs_you`, a turn ending with nobody attached pushes
 * `agent_idle`, through the push door's sender to the stand-in push service (which checks the
 * VAPID JWT and decrypts the payload as a browser would). No file text or command in a payload;
 * nothing is pushed while a client follows the events.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { startPushStandIn, type PushStandIn } from '../fixtures/push/standin';
import { bearer, send } from '../helpers/http';
import { decideAs } from '../helpers/devices';
import { Follower, startCli, waitUntil, type Cli } from './support';

let model: ScriptedModel;
let push: PushStandIn;
let cli: Cli & { configDir: string };
let base: string;

const json = () => ({ ...bearer(cli.token), 'Content-Type': 'application/json' });
const post = (path: string, body: unknown) => send(cli.url, path, { method: 'POST', headers: json(), body: JSON.stringify(body) });

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-agent-push-')));
  mkdirSync(join(base, 'repo'));
  writeFileSync(join(base, 'repo', 'a.txt'), 'secret words\n');
  execFileSync('git', ['init', '-q'], { cwd: join(base, 'repo') });
  model = await startScriptedModel();
  push = await startPushStandIn();
  cli = await startCli(['--agent', join(base, 'repo')], `${model.url}/v1`, { NODE_EXTRA_CA_CERTS: push.caFile, DESKRELAY_PUSH_HOSTS: push.host });
});

afterAll(async () => {
  cli?.child.kill('SIGKILL');
  await model?.close();
  await push?.close();
  rmSync(base, { recursive: true, force: true });
  if (cli) rmSync(cli.configDir, { recursive: true, force: true });
});

describe('agent pushes', () => {
  it('agent_needs_you when an approval waits and nobody is attached; agent_idle when the turn ends', async () => {
    const sub = push.subscribe();
    expect((await post('/v1/push/subscriptions', sub.json)).status).toBe(201);
    model.script([{ calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'new words\n' } }] }, { text: ['done'] }]);
    const created = await post('/v1/agent/sessions', { prompt: 'change it' });
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    await waitUntil(() => push.received.length >= 1, () => 'the agent_needs_you push');
    const [needs] = push.received;
    expect(needs!.problems).toEqual([]);
    const snapshot = await send(cli.url, `/v1/agent/sessions/${id}`, { headers: bearer(cli.token) });
    const callId = snapshot.json.pending[0].callId as string;
    expect(needs!.payload).toEqual({ type: 'agent_needs_you', session: id, callId });
    expect(needs!.plaintext).not.toContain('words');
    expect(needs!.plaintext).not.toContain('a.txt');
    expect((await decideAs(cli, cli.phone, id, callId, 'allow')).status).toBe(204);
    await waitUntil(() => push.received.length >= 2, () => 'the agent_idle push');
    expect(push.received[1]!.payload).toEqual({ type: 'agent_idle', session: id });
    expect(model.failures).toEqual([]);
  });

  it('pushes nothing while a client follows the session\'s events', async () => {
    const before = push.received.length;
    model.script([{ calls: [{ name: 'run_command', arguments: { command: 'true' } }] }, { text: ['ok'] }]);
    const created = await post('/v1/agent/sessions', { prompt: 'run' });
    const events = new Follower(cli.url, cli.token, `/v1/agent/sessions/${created.json.id}/events`);
    await events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    await decideAs(cli, cli.phone, created.json.id, events.of('approval')[0].callId, 'allow');
    await events.waitStatus('idle');
    await new Promise((r) => setTimeout(r, 500));
    // The approval may have been pushed in the instant before the follower attached; the end of the turn was not.
    expect(push.received.slice(before).map((p) => (p.payload as { type: string }).type)).not.toContain('agent_idle');
    events.close();
  });
});
