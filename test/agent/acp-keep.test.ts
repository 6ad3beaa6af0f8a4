/**
 * ACP sessions kept on the desktop (issue 40 with issue 39's agents): the real CLI with
 * keepConversations, a stand-in ACP agent (test/fixtures/acp/agent.mjs), and a real restart
 * (SIGTERM, then a new process on the same config folder). After it, each session is listed
 * idle (a running turn marked interrupted, a waiting approval denied with a note); a new
 * message goes on through session/load when the agent offers it, else in a new ACP session
 * whose first prompt carries the earlier transcript (and the phone is told so).
 */
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { Follower, gitProject, startCli, type Cli } from './support';

const STAND_IN = join(__dirname, '..', 'fixtures', 'acp', 'agent.mjs');

let model: ScriptedModel;
let repo: string;
let base: string;
let agentState: string;
let configDir: string | undefined;
let cli: (Cli & { configDir: string }) | undefined;

const post = (path: string, body: unknown) => send(cli!.url, path, { method: 'POST', headers: { ...bearer(cli!.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const get = (path: string) => send(cli!.url, path, { headers: bearer(cli!.token) });
const follow = (id: string) => new Follower(cli!.url, cli!.token, `/v1/agent/sessions/${id}/events`);
const said = (f: Follower) => f.of('text').map((e) => e.delta).join('');

async function start(): Promise<void> {
  const agents = {
    loader: { name: 'Loader', command: process.execPath, args: [STAND_IN], env: { ACP_STANDIN_LOAD: agentState } },
    standin: { name: 'Stand-in', command: process.execPath, args: [STAND_IN] },
  };
  cli = await startCli(['--agent', repo], `${model.url}/v1`, {}, { keepConversations: true, agents }, configDir);
  configDir = cli.configDir;
}

async function restart(): Promise<void> {
  const exited = once(cli!.child, 'exit');
  cli!.child.kill('SIGTERM');
  await exited;
  await start();
}

async function turn(id: string, events: Follower, text: string): Promise<void> {
  const idle = events.of('status').length;
  expect((await post(`/v1/agent/sessions/${id}/messages`, { text })).status).toBe(202);
  await events.waitStatus('idle', idle);
}

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-acp-keep-', { 'notes.txt': 'old notes\n' }, ['notes.txt']));
  agentState = mkdtempSync(join(tmpdir(), 'deskrelay-acp-state-'));
  model = await startScriptedModel();
  await start();
});
afterAll(async () => {
  cli?.child.kill('SIGKILL');
  await model?.close();
  for (const dir of [base, agentState, configDir]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('ACP sessions kept across a restart of the CLI', () => {
  it('both listed idle with the right state; one goes on through session/load, the other in a new ACP session given the earlier transcript', async () => {
    // A (loads): one turn done, then one running when the relay stops.
    const a = await post('/v1/agent/sessions', { prompt: 'hello', agent: 'loader' });
    expect(a.status, a.body).toBe(201);
    const aEvents = follow(a.json.id);
    await aEvents.waitStatus('idle');
    expect((await post(`/v1/agent/sessions/${a.json.id}/messages`, { text: 'slow' })).status).toBe(202);
    await aEvents.waitFor((f) => said(f).includes('working slowly'), 'the slow turn');
    // B (cannot load): an approval waits when the relay stops.
    const b = await post('/v1/agent/sessions', { prompt: 'write kept.txt never', agent: 'standin' });
    expect(b.status, b.body).toBe(201);
    const bEvents = follow(b.json.id);
    await bEvents.waitFor((f) => f.of('approval').length === 1, "B's approval");
    const waited = bEvents.of('approval')[0].callId;
    aEvents.close();
    bEvents.close();

    await restart();

    const listed = (await get('/v1/agent/sessions')).json.sessions;
    expect(listed.map((s: any) => [s.id, s.agent, s.status, s.pending]).sort()).toEqual([[a.json.id, 'loader', 'idle', 0], [b.json.id, 'standin', 'idle', 0]].sort());
    const snapB = (await get(`/v1/agent/sessions/${b.json.id}`)).json;
    expect(snapB.transcript.at(-1)).toMatchObject({ role: 'tool', callId: waited, denied: true, output: expect.stringContaining('restarted while this approval waited') });

    // A goes on in the agent's own session, loaded: the agent still knows its earlier prompts.
    const a2 = follow(a.json.id);
    await a2.waitFor((f) => f.of('error').some((e) => e.message.includes('it was interrupted')), "A's interruption");
    const before = a2.events.length;
    await turn(a.json.id, a2, 'history');
    expect(said(a2)).toContain('history: ["hello","slow"]');
    // What session/load replays is not told again as new words.
    expect(said(a2).split('Hello from the stand-in').length - 1).toBe(1);
    expect(a2.events.slice(before).filter((e) => e.data.type === 'context')).toEqual([]);
    a2.close();

    // B starts a new ACP session: its first prompt carries the earlier transcript, and the phone is told.
    const b2 = follow(b.json.id);
    await b2.waitStatus('idle');
    await turn(b.json.id, b2, 'go on');
    const told = b2.of('context').at(-1);
    expect(told.message).toMatch(/could not reload its earlier session: .*earlier transcript was given to it/);
    const echoed = said(b2).slice(said(b2).lastIndexOf('unknown prompt: '));
    expect(echoed).toContain('write kept.txt never');
    expect(echoed).toContain('restarted while this approval waited');
    expect(echoed.trimEnd().endsWith('go on')).toBe(true);
    expect(echoed.split('go on').length - 1, 'the new message, once').toBe(1);
    expect(existsSync(join(repo, 'kept.txt'))).toBe(false);
    b2.close();
  });
});
