/**
 * Real ACP agents end to end (issue 39), installed from npm into .cache/acp by
 * scripts/install-acp-agents.mjs, each pointed at a scripted stand-in of its provider's wire
 * format, run by the real CLI as config.json "agents": Claude Code through
 * @zed-industries/claude-code-acp with the Anthropic Messages stand-in, Gemini CLI (`gemini --acp`)
 * with the Gemini stand-in, Qwen Code (`qwen --acp`) with the OpenAI Chat Completions stand-in
 * (test/fixtures/providers, tool-calls mode). The phone's side over HTTP:
 * the agent's permission arrives as an approval; Allow writes the file on disk through DeskRelay,
 * Deny leaves it alone.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicStandIn, type AnthropicStandIn } from '../fixtures/providers/anthropic';
import { startGeminiStandIn, type GeminiStandIn } from '../fixtures/providers/gemini';
import { startOpenAiStandIn, type OpenAiStandIn } from '../fixtures/providers/openai';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { decideAs } from '../helpers/devices';
import { bearer, send } from '../helpers/http';
import { Follower, gitProject, startCli, type Cli } from './support';

const CACHE = join(__dirname, '..', '..', '.cache', 'acp', 'node_modules');
const CLAUDE_ACP = join(CACHE, '@zed-industries', 'claude-code-acp', 'dist', 'index.js');
const GEMINI = join(CACHE, '@google', 'gemini-cli', 'bundle', 'gemini.js');
const QWEN = join(CACHE, '@qwen-code', 'qwen-code', 'cli-entry.js');

let anthropic: AnthropicStandIn;
let gemini: GeminiStandIn;
let geminiHome: string;
let openai: OpenAiStandIn;
let qwenHome: string;
let model: ScriptedModel;
let cli: Cli & { configDir: string };
let repo: string;
let base: string;
let home: string;

const post = (path: string, body: unknown) => send(cli.url, path, { method: 'POST', headers: { ...bearer(cli.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

beforeAll(async () => {
  for (const entry of [CLAUDE_ACP, GEMINI, QWEN]) if (!existsSync(entry)) throw new Error(`${entry} is missing: run "node scripts/install-acp-agents.mjs" first`);
  ({ base, repo } = gitProject('deskrelay-claude-', { 'README.md': '# project\n' }));
  home = mkdtempSync(join(tmpdir(), 'deskrelay-claude-home-'));
  anthropic = await startAnthropicStandIn({ mode: 'tool-calls' });
  gemini = await startGeminiStandIn({ mode: 'tool-calls' });
  // Gemini CLI: an API key, no usage statistics or telemetry (they would look up Google hosts).
  geminiHome = mkdtempSync(join(tmpdir(), 'deskrelay-gemini-home-'));
  mkdirSync(join(geminiHome, '.gemini'));
  writeFileSync(join(geminiHome, '.gemini', 'settings.json'), JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } }, privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false } }));
  openai = await startOpenAiStandIn({ mode: 'tool-calls' });
  qwenHome = mkdtempSync(join(tmpdir(), 'deskrelay-qwen-home-'));
  mkdirSync(join(qwenHome, '.qwen'));
  writeFileSync(join(qwenHome, '.qwen', 'settings.json'), JSON.stringify({ security: { auth: { selectedType: 'openai' } }, privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false } }));
  model = await startScriptedModel();
  cli = await startCli(['--agent', repo], `${model.url}/v1`, {}, {
    agents: {
      claude: {
        name: 'Claude Code',
        command: process.execPath,
        args: [CLAUDE_ACP],
        env: {
          ANTHROPIC_BASE_URL: anthropic.url,
          ANTHROPIC_API_KEY: 'sk-ant-test-key-for-the-stand-in',
          HOME: home,
          IS_SANDBOX: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_AUTOUPDATER: '1',
        },
      },
      qwen: { name: 'Qwen Code', command: process.execPath, args: [QWEN, '--acp'], env: { HOME: qwenHome, OPENAI_API_KEY: 'test-key-for-the-stand-in', OPENAI_BASE_URL: openai.url, OPENAI_MODEL: 'gpt-4o' } },
      gemini: { name: 'Gemini CLI', command: process.execPath, args: [GEMINI, '--acp'], env: { HOME: geminiHome, GEMINI_API_KEY: 'test-key-for-the-stand-in', GOOGLE_GEMINI_BASE_URL: gemini.url } },
    },
  });
}, 60_000);
afterAll(async () => {
  // A clean stop: the relay ends its agents, which would otherwise go on writing into their homes as these are removed.
  const child = cli?.child;
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await anthropic?.close();
  await gemini?.close();
  await openai?.close();
  await model?.close();
  for (const dir of [base, home, geminiHome, qwenHome, cli?.configDir]) if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
});

/** A session asking Claude Code to write `name`; resolves at its approval card. */
const askToWrite = (name: string, content: string) => ask(`Write ${name}`, 'mcp__acp__Write', { file_path: join(repo, name), content });

/** A session where `agent`'s model calls its `tool` with `input`; resolves at its first approval card. */
async function ask(prompt: string, tool: string, input: Record<string, unknown>, agent: 'claude' | 'gemini' | 'qwen' = 'claude'): Promise<{ id: string; events: Follower; approval: any }> {
  ({ claude: anthropic, gemini, qwen: openai })[agent].set({ mode: 'tool-calls', script: [[{ name: tool, arguments: JSON.stringify(input) }]] });
  const created = await post('/v1/agent/sessions', { prompt, agent });
  expect(created.status, created.body).toBe(201);
  const events = new Follower(cli.url, cli.token, `/v1/agent/sessions/${created.json.id}/events`);
  await events.waitFor((f) => f.of('approval').length > 0 || f.of('status').some((s) => s.status === 'failed'), 'the approval', 60_000);
  expect(events.of('error'), JSON.stringify(events.of('error'))).toEqual([]);
  return { id: created.json.id, events, approval: events.of('approval')[0] };
}

describe('Claude Code (claude-code-acp 0.16.2) as an ACP agent', () => {
  it('is listed as available', async () => {
    const reply = await send(cli.url, '/v1/agent/agents', { headers: bearer(cli.token) });
    expect(reply.json.agents.find((a: any) => a.id === 'claude')).toEqual({ id: 'claude', name: 'Claude Code', available: true });
  }, 60_000);

  it('asks to write a file: the approval shows the diff; Allow writes it on disk', async () => {
    const s = await askToWrite('hello.txt', 'Hello from Claude\n');
    expect(s.approval.diff).toContain('+Hello from Claude');
    expect(s.approval.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(existsSync(join(repo, 'hello.txt'))).toBe(false);
    expect((await decideAs(cli, cli.phone, s.id, s.approval.callId, 'allow')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(readFileSync(join(repo, 'hello.txt'), 'utf8')).toBe('Hello from Claude\n');
    s.events.close();
  }, 120_000);

  it('runs a shell command through DeskRelay\'s terminal after the approval of that exact line', async () => {
    const s = await ask('Run it', 'mcp__acp__Bash', { command: 'echo from-claude > bash.txt', description: 'Write bash.txt', timeout: 10_000 });
    expect(s.approval.command).toBe('echo from-claude > bash.txt');
    expect(existsSync(join(repo, 'bash.txt'))).toBe(false);
    expect((await decideAs(cli, cli.phone, s.id, s.approval.callId, 'allow')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(s.events.of('approval')).toHaveLength(1);
    expect(readFileSync(join(repo, 'bash.txt'), 'utf8')).toBe('from-claude\n');
    // It ran in DeskRelay's runner (terminal/create), covered by the Allow of that line.
    expect(cli.stdout() + cli.stderr()).toContain('terminal/create command="echo from-claude > bash.txt" (allowed)');
    s.events.close();
  }, 120_000);

  it('Deny leaves the file alone', async () => {
    const s = await askToWrite('denied.txt', 'Should not exist\n');
    expect((await decideAs(cli, cli.phone, s.id, s.approval.callId, 'deny')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(existsSync(join(repo, 'denied.txt'))).toBe(false);
    s.events.close();
  }, 120_000);
});

describe('Gemini CLI (0.61.0, gemini --acp) as an ACP agent', () => {
  const askGemini = (name: string, content: string) => ask(`Write ${name}`, 'write_file', { file_path: join(repo, name), content }, 'gemini');

  it('asks to write a file (reading it through DeskRelay first): Allow writes it on disk', async () => {
    const s = await askGemini('gemini.txt', 'Hello from Gemini\n');
    expect(s.approval.diff).toContain('+Hello from Gemini');
    expect(existsSync(join(repo, 'gemini.txt'))).toBe(false);
    expect((await decideAs(cli, cli.phone, s.id, s.approval.callId, 'allow')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(s.events.of('approval')).toHaveLength(1);
    expect(readFileSync(join(repo, 'gemini.txt'), 'utf8')).toBe('Hello from Gemini\n');
    expect(cli.stdout() + cli.stderr()).toContain('(gemini): fs/read_text_file path="gemini.txt" (missing)');
    s.events.close();
  }, 120_000);

  it('Deny leaves the file alone', async () => {
    const s = await askGemini('gemini-denied.txt', 'Should not exist\n');
    expect((await decideAs(cli, cli.phone, s.id, s.approval.callId, 'deny')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(existsSync(join(repo, 'gemini-denied.txt'))).toBe(false);
    s.events.close();
  }, 120_000);
});

describe('Qwen Code (0.24.4, qwen --acp) as an ACP agent', () => {
  const askQwen = (name: string, content: string) => ask(`Write ${name}`, 'write_file', { file_path: join(repo, name), content }, 'qwen');

  it('starts in its "auto" mode, which writes unasked: DeskRelay sets "default", so the write asks; Allow writes it', async () => {
    const s = await askQwen('qwen.txt', 'Hello from Qwen\n');
    expect(s.events.of('modes').map((m) => m.current)).toEqual(['auto', 'default']);
    expect(s.approval.diff).toContain('+Hello from Qwen');
    expect(existsSync(join(repo, 'qwen.txt'))).toBe(false);
    expect((await decideAs(cli, cli.phone, s.id, s.approval.callId, 'allow')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(readFileSync(join(repo, 'qwen.txt'), 'utf8')).toBe('Hello from Qwen\n');
    s.events.close();
  }, 120_000);

  it('Deny leaves the file alone', async () => {
    const s = await askQwen('qwen-denied.txt', 'Should not exist\n');
    expect((await decideAs(cli, cli.phone, s.id, s.approval.callId, 'deny')).status).toBe(204);
    await s.events.waitStatus('idle');
    expect(existsSync(join(repo, 'qwen-denied.txt'))).toBe(false);
    s.events.close();
  }, 120_000);
});
