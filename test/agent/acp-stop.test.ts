/**
 * How the relay ends an ACP agent when it stops (SIGTERM to `deskrelay serve`): the agent's input
 * ends first, so an agent that saves what it keeps once its turns are over (Claude Code writes
 * its session file after the turn has ended) still has it on the next start; and the CLI exits
 * only once every agent has, so none is left behind, even one that ignores SIGTERM. Real CLI,
 * the stand-in ACP agent (test/fixtures/acp/agent.mjs) with ACP_STANDIN_LAZY / _STUBBORN.
 */
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { alive } from '../helpers/process';
import { Follower, gitProject, startCli, type Cli } from './support';

const STAND_IN = join(__dirname, '..', 'fixtures', 'acp', 'agent.mjs');

let model: ScriptedModel;
let repo: string;
let base: string;
const dirs: string[] = [];
const clis: Cli[] = [];
const pidsLeft: number[] = [];

const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
async function start(agentEnv: Record<string, string>, configDir?: string): Promise<Cli & { configDir: string }> {
  const agents = { standin: { name: 'Stand-in', command: process.execPath, args: [STAND_IN], env: agentEnv } };
  const cli = await startCli(['--agent', repo], `${model.url}/v1`, {}, { keepConversations: true, agents }, configDir);
  clis.push(cli);
  if (!configDir) dirs.push(cli.configDir);
  return cli;
}

async function stopCli(cli: Cli): Promise<void> {
  const exited = once(cli.child, 'exit');
  cli.child.kill('SIGTERM');
  await exited;
}

const post = (cli: Cli, path: string, body: unknown) => send(cli.url, path, { method: 'POST', headers: { ...bearer(cli.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const said = (f: Follower) => f.of('text').map((e) => e.delta).join('');

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-acp-stop-', { 'notes.txt': 'notes\n' }, ['notes.txt']));
  model = await startScriptedModel();
});
afterEach(() => {
  for (const cli of clis.splice(0)) cli.child.kill('SIGKILL');
  // A stuck stand-in the CLI failed to end would outlive the test run.
  for (const pid of pidsLeft.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
});
afterAll(async () => {
  await model?.close();
  for (const dir of [base, ...dirs]) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
});

describe('the relay stopping with an ACP agent running', () => {
  it('ends its input first: an agent that saves its session when its input ends has it on the next start (session/load)', async () => {
    const state = tempDir('deskrelay-acp-lazy-');
    const env = { ACP_STANDIN_LOAD: state, ACP_STANDIN_LAZY: '1' };
    const first = await start(env);
    const created = await post(first, '/v1/agent/sessions', { prompt: 'hello', agent: 'standin' });
    expect(created.status, created.body).toBe(201);
    const id = created.json.id as string;
    const events = new Follower(first.url, first.token, `/v1/agent/sessions/${id}/events`);
    await events.waitStatus('idle');
    events.close();
    // Nothing is saved yet: this agent writes its sessions when its input ends.
    expect(readdirSync(state)).toEqual([]);
    await stopCli(first);
    expect(readdirSync(state)).toEqual(['standin-sessions.json']);

    const second = await start(env, first.configDir);
    const again = new Follower(second.url, second.token, `/v1/agent/sessions/${id}/events`);
    expect((await post(second, `/v1/agent/sessions/${id}/messages`, { text: 'history' })).status).toBe(202);
    await again.waitFor((f) => said(f).includes('history: '), 'the history reply');
    // Loaded, not given the transcript as context: the agent itself remembers the first prompt.
    expect(said(again)).toContain('history: ["hello"]');
    again.close();
  });

  it('exits only once its agents have: one that ignores SIGTERM and its input ending is killed, not left behind', async () => {
    const pids = tempDir('deskrelay-acp-pids-');
    const cli = await start({ ACP_STANDIN_STUBBORN: '1', ACP_STANDIN_PIDS: pids });
    const created = await post(cli, '/v1/agent/sessions', { prompt: 'hello', agent: 'standin' });
    expect(created.status, created.body).toBe(201);
    const events = new Follower(cli.url, cli.token, `/v1/agent/sessions/${created.json.id}/events`);
    await events.waitStatus('idle');
    events.close();
    const [pid] = readdirSync(pids).map(Number);
    pidsLeft.push(pid!);
    expect(alive(pid!)).toBe(true);
    await stopCli(cli);
    expect(alive(pid!)).toBe(false);
  });
});
