/**
 * MCP tools for the CLI's agent (issue 40): config.json's "mcpServers" (stdio, the shape other
 * MCP clients read) started by `deskrelay serve`, their tools offered to the model as
 * `<server>__<tool>`, each asking first unless in agent.autoApproveTools; a server that dies at
 * start is reported (GET /v1/agent/folders, `deskrelay doctor`) and the agent still works. The
 * stand-in server is built on the SDK's server API (test/fixtures/mcp/notes-server.mjs).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, toolResults, type ScriptedModel } from '../fixtures/providers/scripted';
import { spawnCli } from '../helpers/cli';
import { decideAs } from '../helpers/devices';
import { bearer, send } from '../helpers/http';
import { alive, Follower, gitProject, startCli, waitUntil, type Cli } from './support';

const fixture = (name: string) => join(__dirname, '..', 'fixtures', 'mcp', name);
let model: ScriptedModel;
let cli: Cli & { configDir: string };
let base: string;
let repo: string;
let mcpConfig: Record<string, unknown>;

beforeAll(async () => {
  ({ base, repo } = gitProject('deskrelay-mcp-', { 'README.md': '# notes\n' }));
  model = await startScriptedModel();
  mcpConfig = {
    mcpServers: {
      notes: { command: process.execPath, args: [fixture('notes-server.mjs')], env: { NOTES_GREETING: 'hello from config', NOTES_PID_FILE: join(base, 'notes.pid') } },
      broken: { command: process.execPath, args: [fixture('crash-server.mjs')] },
      flaky: { command: process.execPath, args: [fixture('notes-server.mjs')], env: { NOTES_DIE_ON_CALL: '1' } },
    },
    agent: { autoApproveTools: ['notes__time'] },
  };
  cli = await startCli(['--agent', repo], `${model.url}/v1`, { MY_SECRET_TOKEN: 'tok-do-not-pass' }, mcpConfig);
});
afterAll(async () => {
  cli?.child.kill('SIGKILL');
  await model?.close();
  if (base) rmSync(base, { recursive: true, force: true });
  if (cli) rmSync(cli.configDir, { recursive: true, force: true });
});

const post = (path: string, body: unknown) => send(cli.url, path, { method: 'POST', headers: { ...bearer(cli.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const get = (path: string) => send(cli.url, path, { headers: bearer(cli.token) });

async function toolServers(): Promise<any[]> {
  let servers: any[] = [];
  const started = Date.now();
  while (Date.now() - started < 15_000) {
    servers = (await get('/v1/agent/folders')).json.toolServers ?? [];
    if (servers.length === 3 && servers.every((s) => s.error !== 'Starting…')) return servers;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`tool servers never settled: ${JSON.stringify(servers)}`);
}

async function session(prompt: string): Promise<{ id: string; events: Follower }> {
  const created = await post('/v1/agent/sessions', { prompt });
  expect(created.status, created.body).toBe(201);
  return { id: created.json.id, events: new Follower(cli.url, cli.token, `/v1/agent/sessions/${created.json.id}/events`) };
}

describe('MCP servers in the CLI', () => {
  it('a server that dies at start is reported on the agent screen; the working one lists its tools', async () => {
    const servers = await toolServers();
    expect(servers.find((s) => s.name === 'notes')).toEqual({ name: 'notes', ok: true, tools: 3 });
    const broken = servers.find((s) => s.name === 'broken');
    expect(broken.ok).toBe(false);
    expect(broken.error).toContain('Could not start');
    expect(broken.error).toContain('boom, no database');
  });

  it("the model calls a server's tool: the approval card shows its JSON input, the result goes back to the model", async () => {
    await toolServers();
    let offered: string[] = [];
    model.script([
      { check: (body) => void (offered = (body.tools ?? []).map((t: any) => t.function.name)), calls: [{ name: 'notes__lookup', arguments: { key: 'groceries' } }] },
      { check: (body) => expect(toolResults(body).at(-1)!.content).toBe('note groceries: buy milk'), text: ['You need milk.'] },
    ]);
    const { id, events } = await session('What is on my grocery note?');
    await events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    const approval = events.of('approval')[0];
    expect(approval.tool).toBe('notes__lookup');
    expect(approval.input).toEqual({ key: 'groceries' });
    expect(approval.command).toBeUndefined();
    expect((await decideAs(cli, cli.phone, id, approval.callId, 'allow')).status).toBe(204);
    await events.waitStatus('idle');
    events.close();
    expect(model.failures).toEqual([]);
    expect(offered).toEqual(expect.arrayContaining(['read_file', 'notes__lookup', 'notes__time', 'notes__env']));
    expect(offered.some((n) => n.startsWith('broken__'))).toBe(false);
    expect(events.of('tool_result')[0]).toMatchObject({ ok: true, output: 'note groceries: buy milk' });
  });

  it('a tool in agent.autoApproveTools runs without asking; a server gets the scrubbed environment plus its own env', async () => {
    await toolServers();
    model.script([
      { calls: [{ name: 'notes__time', arguments: {} }] },
      { check: (body) => expect(toolResults(body).at(-1)!.content).toBe('It is 12:00 on the notes server.'), calls: [{ name: 'notes__env', arguments: {} }] },
      { text: ['Done.'] },
    ]);
    const { id, events } = await session('What time is it there?');
    await events.waitFor((f) => f.of('approval').length === 1, 'the env approval');
    expect(events.of('approval').map((a) => a.tool)).toEqual(['notes__env']);
    await decideAs(cli, cli.phone, id, events.of('approval')[0].callId, 'allow');
    await events.waitStatus('idle');
    events.close();
    expect(model.failures).toEqual([]);
    const env = JSON.parse(events.of('tool_result')[1].output);
    expect(env).toEqual({ greeting: 'hello from config', secret: null, deskrelay: [] });
  });

  it('deskrelay doctor reports each server: its tools, or why it did not start (a warning, not fatal)', async () => {
    const configPath = join(base, 'doctor.json');
    const servers = structuredClone(mcpConfig.mcpServers) as any;
    servers.notes.env.NOTES_PID_FILE = join(base, 'doctor-notes.pid');
    writeFileSync(configPath, JSON.stringify({ activeProvider: 'scripted', providers: [{ id: 'scripted', kind: 'openai-compatible', baseUrl: `${model.url}/v1`, model: 'gpt-4o' }], mcpServers: servers }));
    const run = spawnCli(['doctor', '--config', configPath], { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: cli.configDir });
    await new Promise((r) => run.child.on('exit', r));
    expect(run.stdout()).toMatch(/\[ok  \] MCP server "notes": started, 3 tools/);
    expect(run.stdout()).toMatch(/\[warn\] MCP server "broken": Could not start: .*boom, no database/);
    // doctor stops what it started.
    const doctorPid = Number(readFileSync(join(base, 'doctor-notes.pid'), 'utf8'));
    await waitUntil(() => !alive(doctorPid), () => `doctor's MCP server ${doctorPid} to end`, 5_000);
  });

  it('a server that crashes while the agent works: the call fails, the agent screen says it stopped, the agent goes on with the others', async () => {
    expect((await toolServers()).find((s) => s.name === 'flaky')).toEqual({ name: 'flaky', ok: true, tools: 3 });
    model.script([
      { calls: [{ name: 'flaky__lookup', arguments: { key: 'x' } }] },
      { text: ['That server is gone.'] },
      { check: (body) => expect((body.tools ?? []).some((t: any) => t.function.name.startsWith('flaky__'))).toBe(false), calls: [{ name: 'notes__time', arguments: {} }] },
      { check: (body) => expect(toolResults(body).at(-1)!.content).toBe('It is 12:00 on the notes server.'), text: ['Noon.'] },
    ]);
    const { id, events } = await session('Look up x on the flaky server');
    await events.waitFor((f) => f.of('approval').length === 1, 'the approval');
    await decideAs(cli, cli.phone, id, events.of('approval')[0].callId, 'allow');
    await events.waitStatus('idle');
    expect(events.of('tool_result')[0]).toMatchObject({ ok: false });
    const flaky = (await get('/v1/agent/folders')).json.toolServers.find((s: any) => s.name === 'flaky');
    expect(flaky.ok).toBe(false);
    expect(flaky.error).toMatch(/^Stopped.*gone mid-call/);
    const idle = events.of('status').length;
    expect((await post(`/v1/agent/sessions/${id}/messages`, { text: 'What time is it on the notes server?' })).status).toBe(202);
    await events.waitStatus('idle', idle);
    events.close();
    expect(model.failures).toEqual([]);
    expect(events.of('tool_result').at(-1)).toMatchObject({ ok: true, output: 'It is 12:00 on the notes server.' });
  });

  it('the servers stop with the relay', async () => {
    const pid = Number(readFileSync(join(base, 'notes.pid'), 'utf8'));
    expect(alive(pid)).toBe(true);
    cli.child.kill('SIGTERM');
    await waitUntil(() => !alive(pid), () => `the MCP server ${pid} to end with the relay`, 10_000);
  });
});
