/**
 * Parallel sessions in worktrees (issue 40), with a real git repository: "worktree": true makes
 * `git worktree add` on a new branch deskrelay/<short id> in the config folder's worktrees/
 * (never in the project, no hook run), the session works there; Merge is asked like a command
 * (the card shows the exact line) and merges into the project's branch; Discard removes the
 * worktree and the branch.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { startAgentRelay, type AgentRelay } from './inProcess';
import { gitProject } from './support';

let model: ScriptedModel;
let relay: AgentRelay;
let base: string;
let repo: string;
let configDir: string;
const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' });

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-wt-', { 'src/a.txt': 'one\n', 'README.md': '# wt\n' }));
  git('config', 'user.name', 'Desk User');
  git('config', 'user.email', 'desk@example.com');
  // A hook that would mark it ran: worktree add must not run it.
  writeFileSync(join(repo, '.git', 'hooks', 'post-checkout'), `#!/bin/sh\ntouch "${join(base, 'hook-ran')}"\n`);
  chmodSync(join(repo, '.git', 'hooks', 'post-checkout'), 0o755);
  configDir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-wt-cfg-')));
  model = await startScriptedModel();
  relay = await startAgentRelay([repo], model, { configDir });
});
afterAll(async () => {
  await relay?.close();
  await model?.close();
  rmSync(base, { recursive: true, force: true });
  rmSync(configDir, { recursive: true, force: true });
});

/** A worktree session whose model writes src/a.txt (approved); its id and worktree. */
async function editingSession(content: string): Promise<{ id: string; worktree: any }> {
  model.script([{ calls: [{ name: 'write_file', arguments: { path: 'src/a.txt', content } }] }, { text: ['Written.'] }]);
  const created = await relay.post('/v1/agent/sessions', { prompt: 'Change a.txt', worktree: true });
  expect(created.status, created.body).toBe(201);
  const { id, worktree } = created.json;
  const waiting = await relay.until(id, (s) => s.pending.length === 1, 'the write approval');
  expect((await relay.post(`/v1/agent/sessions/${id}/approvals/${waiting.pending[0].callId}`, { decision: 'allow' })).status).toBe(204);
  await relay.until(id, (s) => s.status === 'idle', 'the turn to end');
  expect(model.failures).toEqual([]);
  return { id, worktree };
}

describe('worktree sessions', () => {
  it('works in its own worktree on deskrelay/<short id>, in the config folder, not the project; no hook runs', async () => {
    const { id, worktree } = await editingSession('two\n');
    const short = id.slice(0, 8);
    expect(worktree).toEqual({ branch: `deskrelay/${short}`, path: join(configDir, 'worktrees', `project-${short}`), into: git('symbolic-ref', '--short', 'HEAD').trim() });
    expect(readFileSync(join(worktree.path, 'src/a.txt'), 'utf8')).toBe('two\n');
    expect(readFileSync(join(repo, 'src/a.txt'), 'utf8')).toBe('one\n');
    expect(git('branch', '--list', `deskrelay/${short}`)).toContain(`deskrelay/${short}`);
    expect(existsSync(join(base, 'hook-ran'))).toBe(false);
    const snap = (await relay.get(`/v1/agent/sessions/${id}`)).json;
    expect(snap.worktree.branch).toBe(`deskrelay/${short}`);
  });

  it('Merge asks like a command, the card showing the exact line, then merges the work into the project', async () => {
    const { id, worktree } = await editingSession('merged\n');
    const asked = await relay.post(`/v1/agent/sessions/${id}/merge`, {});
    expect(asked.status, asked.body).toBe(202);
    const waiting = await relay.until(id, (s) => s.pending.length === 1, 'the merge approval');
    const card = waiting.pending[0];
    expect(card.command).toBe(asked.json.command);
    expect(card.command).toContain(`git merge --no-edit '${worktree.branch}'`);
    expect(readFileSync(join(repo, 'src/a.txt'), 'utf8')).toBe('one\n');
    expect((await relay.post(`/v1/agent/sessions/${id}/approvals/${card.callId}`, { decision: 'allow' })).status).toBe(204);
    const done = await relay.until(id, (s) => s.status === 'idle' && s.transcript.at(-1).role === 'tool', 'the merge to run');
    expect(done.transcript.at(-1)).toMatchObject({ tool: 'merge', ok: true });
    expect(readFileSync(join(repo, 'src/a.txt'), 'utf8')).toBe('merged\n');
    expect(git('log', '-1', '--format=%s')).toContain('DeskRelay agent session');
  });

  it('Discard removes the worktree, its branch and the session', async () => {
    const { id, worktree } = await editingSession('thrown away\n');
    expect((await relay.post(`/v1/agent/sessions/${id}/discard`, {})).status).toBe(204);
    expect(existsSync(worktree.path)).toBe(false);
    expect(git('branch', '--list', worktree.branch).trim()).toBe('');
    expect((await relay.get(`/v1/agent/sessions/${id}`)).status).toBe(404);
  });

  it('a session without a worktree has no Merge (400), and a folder that is no repository gets none (400)', async () => {
    model.script([{ text: ['Hi.'] }]);
    const id = await relay.start('hello');
    await relay.until(id, (s) => s.status === 'idle', 'idle');
    expect((await relay.post(`/v1/agent/sessions/${id}/merge`, {})).status).toBe(400);
  });
});
