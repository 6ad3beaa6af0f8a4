/**
 * ACP agents behind the same session, gate and door (issue 39): the real CLI
 * (`dist/cli.js serve --agent DIR`) with a stand-in ACP agent built on @agentclientprotocol/sdk
 * (test/fixtures/acp/agent.mjs) named in config.json "agents", driven over real HTTP as a phone
 * would: events, approvals through the door, files on disk.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { decideAs, actAs } from '../helpers/devices';
import { bearer, send } from '../helpers/http';
import { Follower, gitProject, startCli, type Cli } from './support';

const STAND_IN = join(__dirname, '..', 'fixtures', 'acp', 'agent.mjs');
const standIn = (env: Record<string, string> = {}) => ({ name: 'Stand-in', command: process.execPath, args: [STAND_IN], env });

let model: ScriptedModel;
let cli: Cli & { configDir: string };
let repo: string;
let base: string;

const json = () => ({ ...bearer(cli.token), 'Content-Type': 'application/json' });
const post = (path: string, body: unknown) => send(cli.url, path, { method: 'POST', headers: json(), body: JSON.stringify(body) });
const get = (path: string) => send(cli.url, path, { headers: bearer(cli.token) });

async function session(prompt: string, agent = 'standin'): Promise<{ id: string; events: Follower }> {
  const created = await post('/v1/agent/sessions', { prompt, agent });
  expect(created.status, created.body).toBe(201);
  expect(created.json.agent).toBe(agent);
  return { id: created.json.id, events: new Follower(cli.url, cli.token, `/v1/agent/sessions/${created.json.id}/events`) };
}
const decide = (id: string, callId: string, decision: string) => decideAs(cli, cli.phone, id, callId, decision);
const said = (f: Follower) => f.of('text').map((e) => e.delta).join('');
/** Sends `text` as the next turn and waits for it to end (idle). */
async function turn(s: { id: string; events: Follower }, text: string): Promise<void> {
  const idle = s.events.of('status').length;
  expect((await post(`/v1/agent/sessions/${s.id}/messages`, { text })).status).toBe(202);
  await s.events.waitStatus('idle', idle);
}

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-acp-', { 'notes.txt': 'old notes\n', '.env': 'SECRET=1\n' }, ['notes.txt']));
  writeFileSync(join(base, 'outside.txt'), 'not yours\n');
  model = await startScriptedModel();
  cli = await startCli(['--agent', repo], `${model.url}/v1`, {}, {
    agents: {
      standin: standIn(),
      'standin-auth': standIn({ ACP_STANDIN_AUTH: '1' }),
      broken: standIn({ ACP_STANDIN_EXIT: '1' }),
      missing: { name: 'Missing', command: 'no-such-acp-agent-for-tests' },
    },
  });
});
afterEach(async () => {
  const list = await get('/v1/agent/sessions');
  for (const s of list.json?.sessions ?? []) await actAs(cli, s.id, 'delete');
});
afterAll(async () => {
  cli?.child.kill('SIGKILL');
  await model?.close();
  if (base) rmSync(base, { recursive: true, force: true });
  if (cli) rmSync(cli.configDir, { recursive: true, force: true });
});

describe('GET /v1/agent/agents', () => {
  it('lists DeskRelay, the built-in ACP agents with an install hint when missing, and the configured ones probed', async () => {
    const reply = await get('/v1/agent/agents');
    expect(reply.status).toBe(200);
    const byId = Object.fromEntries(reply.json.agents.map((a: any) => [a.id, a]));
    expect(reply.json.agents[0]).toEqual({ id: 'deskrelay', name: 'DeskRelay (any model)', available: true });
    expect(byId.standin).toEqual({ id: 'standin', name: 'Stand-in', available: true });
    expect(byId.missing.available).toBe(false);
    expect(byId.missing.reason).toContain('no-such-acp-agent-for-tests is not on the desktop\'s PATH');
    expect(byId.broken.available).toBe(false);
    expect(byId.broken.reason).toMatch(/exited at start \(exit code 2\)/);
    // Its stderr said an api key: the reason never repeats it.
    expect(byId.broken.reason).not.toContain('abcdefghijklmnop123456');
    for (const id of ['claude', 'codex', 'gemini', 'opencode', 'qwen']) expect(byId[id], id).toBeDefined();
    if (!byId.claude.available) expect(byId.claude.reason).toContain('npm install -g @zed-industries/claude-code-acp');
  });

  it('POST /v1/agent/sessions: an unknown agent is 400 naming the ids; an unavailable one says why', async () => {
    const unknown = await post('/v1/agent/sessions', { prompt: 'hello', agent: 'nope' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.code).toBe('request.invalid_body');
    expect(unknown.json.error.message).toContain('"deskrelay", "claude"');
    const missing = await post('/v1/agent/sessions', { prompt: 'hello', agent: 'missing' });
    expect(missing.status).toBe(400);
    expect(missing.json.error.message).toContain('Missing is not available');
  });
});

describe('an ACP session', () => {
  it('maps text, thinking, plan, commands and modes; starts a mode that writes unasked in "default"; the list and snapshot say which agent', async () => {
    const s = await session('hello');
    await s.events.waitStatus('idle');
    expect(said(s.events)).toBe('Hello from the stand-in (mode default).');
    expect(s.events.of('thinking').map((e) => e.delta).join('')).toBe('Thinking about hello.');
    expect(s.events.of('plan').at(-1).entries).toEqual([
      { content: 'Say hello', status: 'completed', priority: 'high' },
      { content: 'Wave', status: 'pending', priority: 'low' },
    ]);
    expect(s.events.of('commands').at(-1).commands).toEqual([
      { name: 'compact', description: 'Compact the conversation' },
      { name: 'review', description: 'Review changes', hint: 'what to review' },
    ]);
    expect(s.events.of('modes').at(-1)).toMatchObject({ current: 'default', modes: [{ id: 'auto' }, { id: 'default' }, { id: 'plan' }] });
    const list = await get('/v1/agent/sessions');
    expect(list.json.sessions.find((x: any) => x.id === s.id).agent).toBe('standin');
    const snap = await get(`/v1/agent/sessions/${s.id}`);
    expect(snap.json).toMatchObject({ agent: 'standin', modes: { current: 'default' }, plan: [{ content: 'Say hello' }, { content: 'Wave' }] });
    expect(snap.json.transcript[0]).toEqual({ role: 'user', text: 'hello' });

    // The picker: POST …/mode sets it through session/set_mode.
    expect((await actAs(cli, s.id, 'mode', { mode: 'plan' })).status).toBe(204);
    await s.events.waitFor((f) => f.of('modes').at(-1).current === 'plan', 'the mode event');
    const bad = await actAs(cli, s.id, 'mode', { mode: 'warp' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toContain('must be one of "default", "plan"');
    // A mode in which the agent acts without asking is the desk's choice only.
    expect(s.events.of('modes').at(-1).modes[0]).toEqual({ id: 'auto', name: 'Auto', unasked: true });
    const unasked = await actAs(cli, s.id, 'mode', { mode: 'auto' });
    expect(unasked.status).toBe(400);
    expect(unasked.json.error.message).toContain('acts without asking; that can be chosen only at the desk');
    expect((await actAs(cli, s.id, 'model', { model: 'x' })).status).toBe(400);
    // Unsigned, as a leaked device token alone would send it: refused, the mode stays.
    expect((await post(`/v1/agent/sessions/${s.id}/mode`, { mode: 'default' })).json.error.code).toBe('agent.signature_required');
    await turn(s, 'hello');
    expect(said(s.events)).toContain('(mode plan).');
    s.events.close();
  });

  it('a permission request is an approval with the diff and digest; Allow picks allow_once by kind and the write lands; Deny picks reject_once and nothing is written', async () => {
    const s = await session('write hello.txt Hello ACP');
    await s.events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    const approval = s.events.of('approval')[0];
    expect(approval.diff).toContain('+Hello ACP');
    expect(approval.diff).toContain('hello.txt');
    expect(approval.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(s.events.of('tool_call')[0]).toMatchObject({ callId: approval.callId, tool: 'Write hello.txt' });
    expect(existsSync(join(repo, 'hello.txt'))).toBe(false);
    expect((await decide(s.id, approval.callId, 'allow')).status).toBe(204);
    await s.events.waitStatus('idle');
    // Only the one card: the agent's own write was what the user allowed.
    expect(s.events.of('approval')).toHaveLength(1);
    expect(said(s.events)).toBe('chose proceed_once');
    expect(readFileSync(join(repo, 'hello.txt'), 'utf8')).toBe('Hello ACP');
    expect(s.events.of('tool_result').at(-1)).toMatchObject({ callId: approval.callId, ok: true });

    const before = s.events.of('approval').length;
    expect((await post(`/v1/agent/sessions/${s.id}/messages`, { text: 'write hello.txt Changed' })).status).toBe(202);
    await s.events.waitFor((f) => f.of('approval').length === before + 1, 'the second approval');
    // The agent named its call "w1" again: a new call, with a relay id of its own.
    expect(s.events.of('approval').at(-1).callId).not.toBe(approval.callId);
    expect((await decide(s.id, s.events.of('approval').at(-1).callId, 'deny')).status).toBe(204);
    await s.events.waitFor((f) => said(f).includes('chose nope'), 'the rejection');
    expect(readFileSync(join(repo, 'hello.txt'), 'utf8')).toBe('Hello ACP');
    s.events.close();
  });

  it('an edit\'s card shows the file\'s change; an allowed edit writes exactly that without asking again', async () => {
    writeFileSync(join(repo, 'edit.txt'), 'one old line\n');
    const s = await session('edit edit.txt old new');
    await s.events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    const diff = s.events.of('approval')[0].diff;
    expect(diff).toContain('-one old line');
    expect(diff).toContain('+one new line');
    expect((await decide(s.id, s.events.of('approval')[0].callId, 'allow')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(said(s.events)).toBe('edited');
    expect(s.events.of('approval')).toHaveLength(1);
    expect(readFileSync(join(repo, 'edit.txt'), 'utf8')).toBe('one new line\n');
    s.events.close();
  });

  it('a write other than what the allowed card showed asks again with its own diff', async () => {
    const s = await session('sneak sneak.txt shown');
    await s.events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    expect(s.events.of('approval')[0].diff).toContain('+shown');
    expect((await decide(s.id, s.events.of('approval')[0].callId, 'allow')).status).toBe(204);
    await s.events.waitFor((f) => f.of('approval').length === 2, 'the second approval');
    const second = s.events.of('approval')[1];
    expect(second).toMatchObject({ tool: 'write_file', input: { path: 'sneak.txt' } });
    expect(second.diff).toContain('+shown and more');
    expect((await decide(s.id, second.callId, 'deny')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(existsSync(join(repo, 'sneak.txt'))).toBe(false);
    s.events.close();
  });

  it('allow_session picks allow_always; later writes are covered by the grant', async () => {
    const s = await session('write a.txt one');
    await s.events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    expect((await decide(s.id, s.events.of('approval')[0].callId, 'allow_session')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(said(s.events)).toBe('chose always_xyz');
    await turn(s, 'rawwrite b.txt two');
    expect(s.events.of('approval')).toHaveLength(1);
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('one');
    expect(readFileSync(join(repo, 'b.txt'), 'utf8')).toBe('two');
    s.events.close();
  });

  it('fs/read_text_file: inside reads, a missing file is empty text, outside and denied paths are errors', async () => {
    const s = await session('read notes.txt');
    await s.events.waitStatus('idle');
    await turn(s, 'read missing.txt');
    await turn(s, `read ${join(base, 'outside.txt')}`);
    await turn(s, 'read .env');
    writeFileSync(join(repo, '..odd.txt'), 'inside\n');
    await turn(s, 'read ..odd.txt');
    const lines = said(s.events);
    expect(lines).toContain('read: "inside\\n"');
    expect(lines).toContain('read: "old notes\\n"');
    expect(lines).toContain('read: ""');
    expect(lines).toMatch(/read error: -32602 .*outside the session's folder/);
    expect(lines).not.toContain('not yours');
    expect(lines).not.toContain('SECRET=1');
    expect(lines.match(/read error/g)).toHaveLength(2);
    s.events.close();
  });

  it('fs/write_text_file unasked: a diff card first; Deny writes nothing; outside and denied paths are refused without a card', async () => {
    const s = await session('rawwrite new.txt fresh');
    await s.events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    const card = s.events.of('approval')[0];
    expect(card).toMatchObject({ tool: 'write_file', input: { path: 'new.txt' } });
    expect(card.diff).toContain('+fresh');
    expect((await decide(s.id, card.callId, 'deny')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(said(s.events)).toContain('write error');
    expect(existsSync(join(repo, 'new.txt'))).toBe(false);
    expect(s.events.of('tool_result').at(-1)).toMatchObject({ callId: card.callId, ok: false, denied: true });
    await turn(s, `rawwrite ${join(base, 'outside.txt')} pwned`);
    await turn(s, 'rawwrite .env pwned');
    expect(s.events.of('approval')).toHaveLength(1);
    expect(readFileSync(join(base, 'outside.txt'), 'utf8')).toBe('not yours\n');
    expect(readFileSync(join(repo, '.env'), 'utf8')).toBe('SECRET=1\n');
    expect(said(s.events).match(/write error/g)).toHaveLength(3);
    s.events.close();
  });

  it('terminals: a permission covers its own command; an unasked terminal asks first with the exact line; its output comes back', async () => {
    const s = await session('run echo from-terminal');
    await s.events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    const card = s.events.of('approval')[0];
    expect(card).toMatchObject({ tool: 'Bash', command: 'echo from-terminal' });
    expect((await decide(s.id, card.callId, 'allow')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(said(s.events)).toBe('exit 0: from-terminal');
    expect(s.events.of('approval')).toHaveLength(1);
    expect(s.events.of('tool_result').at(-1).output).toContain('$ echo from-terminal\nfrom-terminal');

    expect((await post(`/v1/agent/sessions/${s.id}/messages`, { text: 'term echo unasked > made.txt' })).status).toBe(202);
    await s.events.waitFor((f) => f.of('approval').length === 2, 'the terminal approval');
    expect(s.events.of('approval')[1]).toMatchObject({ tool: 'run_command', command: 'echo unasked > made.txt' });
    expect((await decide(s.id, s.events.of('approval')[1].callId, 'deny')).status).toBe(204);
    await s.events.waitFor((f) => said(f).includes('terminal error'), 'the refusal');
    expect(existsSync(join(repo, 'made.txt'))).toBe(false);
    s.events.close();
  });

  it('unknown client methods are "method not found"', async () => {
    const s = await session('unknown');
    await s.events.waitStatus('idle');
    expect(said(s.events)).toBe('unknown error: -32601');
    s.events.close();
  });

  it('Stop sends session/cancel: the turn ends, a pending permission is cancelled, the session goes on', async () => {
    const s = await session('slow');
    await s.events.waitFor((f) => said(f).includes('working slowly'), 'the slow turn');
    expect((await post(`/v1/agent/sessions/${s.id}/stop`, {})).status).toBe(204);
    await s.events.waitStatus('stopped');
    await turn(s, 'hello');
    expect(said(s.events)).toContain('Hello from the stand-in');

    expect((await post(`/v1/agent/sessions/${s.id}/messages`, { text: 'write stopped.txt x' })).status).toBe(202);
    await s.events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    const stopped = s.events.of('status').length;
    expect((await post(`/v1/agent/sessions/${s.id}/stop`, {})).status).toBe(204);
    await s.events.waitStatus('stopped', stopped);
    await turn(s, 'hello');
    expect(said(s.events)).toContain('chose cancelled');
    expect(existsSync(join(repo, 'stopped.txt'))).toBe(false);
    s.events.close();
  });

  it('"worktree": true: the agent\'s folder is the worktree (its cwd, its writes, its terminals); Merge brings the work into the project; Discard removes it', async () => {
    const git = (...a: string[]) => execFileSync('git', a, { cwd: repo, encoding: 'utf8' });
    git('config', 'user.name', 'Desk User');
    git('config', 'user.email', 'desk@example.com');
    const created = await post('/v1/agent/sessions', { prompt: 'write wt.txt from the worktree', agent: 'standin', worktree: true });
    expect(created.status, created.body).toBe(201);
    const { id, worktree } = created.json;
    expect(worktree.path.startsWith(join(cli.configDir, 'worktrees'))).toBe(true);
    const s = { id, events: new Follower(cli.url, cli.token, `/v1/agent/sessions/${id}/events`) };
    await s.events.waitFor((f) => f.of('approval').length === 1, 'the write approval');
    // The stand-in resolves "wt.txt" against the cwd it was given: the card names the worktree's file.
    expect(s.events.of('approval')[0].diff).toContain('wt.txt');
    expect((await decide(id, s.events.of('approval')[0].callId, 'allow')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(readFileSync(join(worktree.path, 'wt.txt'), 'utf8')).toBe('from the worktree');
    expect(existsSync(join(repo, 'wt.txt'))).toBe(false);
    // A terminal runs in the worktree too.
    expect((await post(`/v1/agent/sessions/${id}/messages`, { text: 'term pwd' })).status).toBe(202);
    await s.events.waitFor((f) => f.of('approval').length === 2, 'the terminal approval');
    expect((await decide(id, s.events.of('approval')[1].callId, 'allow')).status).toBe(204);
    await s.events.waitFor((f) => said(f).includes('exit 0'), 'the terminal');
    expect(said(s.events)).toContain(`exit 0: ${worktree.path}`);
    await s.events.waitStatus('idle', s.events.of('status').length - 1);

    const merge = await actAs(cli, id, 'merge');
    expect(merge.status, merge.body).toBe(202);
    await s.events.waitFor((f) => f.of('approval').length === 3, 'the merge approval');
    expect(s.events.of('approval')[2].command).toBe(merge.json.command);
    expect((await decide(id, s.events.of('approval')[2].callId, 'allow')).status).toBe(204);
    await s.events.waitFor((f) => f.of('tool_result').some((r) => r.callId === s.events.of('approval')[2].callId), 'the merge');
    expect(s.events.of('tool_result').at(-1)).toMatchObject({ ok: true });
    expect(readFileSync(join(repo, 'wt.txt'), 'utf8')).toBe('from the worktree');
    s.events.close();

    const other = await post('/v1/agent/sessions', { prompt: 'hello', agent: 'standin', worktree: true });
    expect(other.status, other.body).toBe(201);
    const o = new Follower(cli.url, cli.token, `/v1/agent/sessions/${other.json.id}/events`);
    await o.waitStatus('idle');
    o.close();
    expect((await actAs(cli, other.json.id, 'discard')).status).toBe(204);
    expect(existsSync(other.json.worktree.path)).toBe(false);
    expect(git('branch', '--list', other.json.worktree.branch).trim()).toBe('');
  });

  it('messages queued before a Stop all reach the agent with the next one, in the order sent', async () => {
    const s = await session('slow');
    await s.events.waitFor((f) => said(f).includes('working slowly'), 'the slow turn');
    for (const text of ['first queued', 'second queued']) expect((await post(`/v1/agent/sessions/${s.id}/messages`, { text })).status).toBe(202);
    await s.events.waitFor((f) => f.of('queued').length === 2, 'both queued');
    expect((await post(`/v1/agent/sessions/${s.id}/stop`, {})).status).toBe(204);
    await s.events.waitStatus('stopped');
    await turn(s, 'third');
    // The stand-in echoes a prompt it does not know: the whole prompt it was sent.
    expect(said(s.events)).toContain('unknown prompt: first queued\n\nsecond queued\n\nthird');
    expect(s.events.of('user').map((e) => e.text)).toEqual(['slow', 'first queued', 'second queued', 'third']);
    s.events.close();
  });

  it('Stop on an agent that ignores session/cancel: its process group is killed after the grace and the session says so', async () => {
    const s = await session('hang');
    await s.events.waitFor((f) => said(f).includes('hanging'), 'the hanging turn');
    expect((await post(`/v1/agent/sessions/${s.id}/stop`, {})).status).toBe(204);
    await s.events.waitStatus('failed');
    expect(s.events.of('error').at(-1).message).toMatch(/did not stop within 5 s and was ended/);
    s.events.close();
  });

  it('a crash fails the session with its last stderr lines, token-like text redacted', async () => {
    const s = await session('crash');
    await s.events.waitStatus('failed');
    const message = s.events.of('error').at(-1).message;
    expect(message).toContain('Stand-in ended unexpectedly (exit code 3)');
    expect(message).toContain('fatal: the stand-in crashed on purpose');
    expect(message).not.toContain('abcdefghijklmnopqrstuvwxyz0123456789');
    // It cannot take another turn.
    expect((await post(`/v1/agent/sessions/${s.id}/messages`, { text: 'hello' })).status).toBe(202);
    await s.events.waitFor((f) => f.of('error').length === 2, 'the second error');
    expect(s.events.of('error')[1].message).toContain('ended unexpectedly');
    s.events.close();
  });

  it('an agent that exits between turns fails the session with its stderr, once', async () => {
    const s = await session('crashlater');
    await s.events.waitStatus('failed');
    expect(said(s.events)).toBe('bye');
    expect(s.events.of('error')).toHaveLength(1);
    expect(s.events.of('error')[0].message).toMatch(/^Stand-in ended unexpectedly \(exit code 4\)\. Its last words:\nstand-in: gone after the turn$/);
    s.events.close();
  });

  it('an agent that needs a login says so, asking for nothing on the phone', async () => {
    const s = await session('hello', 'standin-auth');
    await s.events.waitStatus('failed');
    expect(s.events.of('error').at(-1).message).toMatch(/^Log in to Stand-in at the desk/);
    s.events.close();
  });
});
