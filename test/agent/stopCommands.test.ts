/**
 * An approved command that is still running when the relay stops (SIGTERM to `deskrelay serve`)
 * does not outlive it, even one that ignores SIGTERM: the session's close waits for the stopped
 * turn, whose command gets SIGTERM, then SIGKILL 2 s later, before the CLI exits. Real CLI, the
 * scripted OpenAI-compatible model, a real approval signed by the phone's key.
 */
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { decideAs } from '../helpers/devices';
import { bearer, send } from '../helpers/http';
import { alive } from '../helpers/process';
import { Follower, gitProject, startCli, waitUntil, type Cli } from './support';

let model: ScriptedModel;
let repo: string;
let base: string;
let cli: (Cli & { configDir: string }) | undefined;
let sleeper: number | undefined;

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-stop-commands-', { 'README.md': '# project\n' }, ['README.md']));
  model = await startScriptedModel();
});
afterAll(async () => {
  cli?.child.kill('SIGKILL');
  // What the relay failed to end would outlive the test run.
  if (sleeper !== undefined && alive(sleeper)) process.kill(sleeper, 'SIGKILL');
  await model?.close();
  rmSync(base, { recursive: true, force: true });
  if (cli) rmSync(cli.configDir, { recursive: true, force: true });
});

describe('the relay stopping while an approved command runs', () => {
  it('ends the command, one that ignores SIGTERM included, before the CLI exits', async () => {
    cli = await startCli(['--agent', repo], `${model.url}/v1`);
    // Its shell and what it starts ignore SIGTERM; the background sleep says its pid.
    const command = "trap '' TERM; sleep 300 & echo $! > sleep.pid; wait";
    model.script([{ calls: [{ name: 'run_command', arguments: { command } }] }, { text: ['Done.'] }]);
    const created = await send(cli.url, '/v1/agent/sessions', { method: 'POST', headers: { ...bearer(cli.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'Wait a while' }) });
    expect(created.status, created.body).toBe(201);
    const id = created.json.id as string;
    const events = new Follower(cli.url, cli.token, `/v1/agent/sessions/${id}/events`);
    await events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    const [approval] = events.of('approval');
    expect(approval.command).toBe(command);
    expect((await decideAs(cli, cli.phone, id, approval.callId, 'allow')).status).toBe(204);
    const pidFile = join(repo, 'sleep.pid');
    await waitUntil(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', () => 'the command to start', 15_000);
    sleeper = Number(readFileSync(pidFile, 'utf8').trim());
    expect(alive(sleeper)).toBe(true);
    events.close();

    const exited = once(cli.child, 'exit');
    cli.child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
    expect(alive(sleeper)).toBe(false);
  });
});
