/**
 * A kept session's Changes across a real restart of `deskrelay serve` (SIGTERM, then a new
 * process on the same config folder, keepConversations on): the phone lists the same files and
 * its signed Undo puts the bytes back.
 */
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { decideAs, signAction } from '../helpers/devices';
import { bearer, send } from '../helpers/http';
import { ORIGINAL, scriptChanges } from './changingSession';
import { Follower, gitProject, startCli, type Cli } from './support';

let model: ScriptedModel;
let base: string;
let repo: string;
let cli: (Cli & { configDir: string }) | undefined;

const start = async (configDir?: string) => (cli = await startCli(['--agent', repo], `${model.url}/v1`, {}, { keepConversations: true }, configDir));
const asPhone = (path: string, body?: unknown) =>
  send(cli!.url, path, body === undefined ? { headers: bearer(cli!.token) } : { method: 'POST', headers: { ...bearer(cli!.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-changes-kept-cli-', ORIGINAL));
  model = await startScriptedModel();
});
afterAll(async () => {
  cli?.child.kill('SIGKILL');
  await model?.close();
  rmSync(base, { recursive: true, force: true });
  if (cli) rmSync(cli.configDir, { recursive: true, force: true });
});

describe('Changes kept across a restart of the CLI', () => {
  it('the same list after the restart, and a signed Undo restores the bytes', async () => {
    await start();
    scriptChanges(model, repo);
    const created = await asPhone('/v1/agent/sessions', { prompt: 'Fix add and add two' });
    expect(created.status, created.body).toBe(201);
    const id = created.json.id as string;
    const events = new Follower(cli!.url, cli!.token, `/v1/agent/sessions/${id}/events`);
    for (let i = 1; i <= 3; i++) {
      await events.waitFor((f) => f.of('approval').length === i, `approval ${i}`);
      expect((await decideAs(cli!, cli!.phone, id, events.of('approval')[i - 1].callId, 'allow')).status).toBe(204);
    }
    await events.waitFor((f) => f.of('status').at(-1)?.status === 'idle' && f.of('tool_result').length === 3, 'the turn to end');
    events.close();
    const before = (await asPhone(`/v1/agent/sessions/${id}/changes`)).json.files;
    expect(before.map((f: any) => [f.path, f.kind])).toEqual([['README.md', 'modified'], ['src/math.js', 'modified'], ['src/new.js', 'created']]);

    const exited = once(cli!.child, 'exit');
    cli!.child.kill('SIGTERM');
    await exited;
    await start(cli!.configDir);

    const listed = await asPhone(`/v1/agent/sessions/${id}/changes`);
    expect(listed.status, listed.body).toBe(200);
    expect(listed.json.files).toEqual(before);
    const { digest } = listed.json.files[1];
    const signed = await signAction(cli!.phone.key, 'undo', id, ['src/math.js', digest]);
    const undone = await asPhone(`/v1/agent/sessions/${id}/changes/undo`, { path: 'src/math.js', digest, ...signed });
    expect(undone.status, undone.body).toBe(200);
    expect(readFileSync(join(repo, 'src/math.js'), 'utf8')).toBe(ORIGINAL['src/math.js']);
    expect(existsSync(join(repo, 'src/new.js'))).toBe(true);
  });
});
