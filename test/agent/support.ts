/** What the agent's tests share: the CLI in a child process, an SSE follower, a process check. */
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { CLI, spawnCli } from '../helpers/cli';
import { bearer, send } from '../helpers/http';
import { agentDevice, type TestDevice, actAs } from '../helpers/devices';

export interface Cli {
  child: ChildProcess;
  url: string;
  /** The token the agent's tests drive it with: a device allowed at the desk (issue 36), not the pairing token. */
  token: string;
  /** The pairing token, which cannot reach the agent. */
  pairingToken: string;
  /** The device behind `token`, with its key (decisions are signed with it). */
  phone: TestDevice;
  stderr: () => string;
  stdout: () => string;
}

/** Starts `deskrelay serve` on port 0 with a config naming `providerUrl` as its OpenAI-compatible provider (in `dir` when given). */
export async function startCli(args: string[], providerUrl: string, env: Record<string, string> = {}, config: Record<string, unknown> = {}, dir?: string): Promise<Cli & { configDir: string }> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run "node scripts/build.mjs" first');
  // `dir`: the config folder of an earlier run (a restart).
  const configDir = dir ?? mkdtempSync(join(tmpdir(), 'deskrelay-agent-cfg-'));
  writeFileSync(
    join(configDir, 'config.json'),
    JSON.stringify({ activeProvider: 'scripted', providers: [{ id: 'scripted', kind: 'openai-compatible', baseUrl: providerUrl, model: 'gpt-4o' }], ...config }),
  );
  const run = spawnCli(['serve', '--port', '0', ...args], { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: configDir, DESKRELAY_RUNNER_PORTS: '', ...env });
  await waitUntil(() => /\{"url":"[^"]+","token":"dr_[^"]+"\}/.test(run.stdout()), () => `the CLI to start; stderr: ${run.stderr()}`, 15_000);
  const { url, token } = JSON.parse(/\{"url":"[^"]+","token":"dr_[^"]+"\}/.exec(run.stdout())![0]) as { url: string; token: string };
  const phone = await agentDevice({ url, token, configDir });
  return { child: run.child, url, token: phone.token, pairingToken: token, phone, configDir, stderr: run.stderr, stdout: run.stdout };
}

export interface SseEvent {
  id?: number;
  data: any;
}

/** Follows a session's event stream, parsing events as they come; close() cuts the connection. */
export class Follower {
  readonly events: SseEvent[] = [];
  private buffer = '';
  private req;
  status = 0;
  ended = false;

  constructor(url: string, token: string, path: string, lastEventId?: number) {
    const u = new URL(url);
    const headers: Record<string, string> = { ...bearer(token) };
    if (lastEventId !== undefined) headers['Last-Event-ID'] = String(lastEventId);
    this.req = request({ host: u.hostname, port: u.port, path, headers, agent: false }, (res) => {
      this.status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      res.on('data', (d: string) => this.take(d));
      res.on('end', () => (this.ended = true));
      res.on('error', () => {});
    });
    this.req.on('error', () => {});
    this.req.end();
  }

  private take(text: string): void {
    this.buffer += text;
    let at: number;
    while ((at = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, at);
      this.buffer = this.buffer.slice(at + 2);
      let id: number | undefined;
      let data: string | undefined;
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) id = Number(line.slice(4));
        else if (line.startsWith('data: ')) data = line.slice(6);
      }
      if (data !== undefined) this.events.push({ id, data: JSON.parse(data) });
    }
  }

  of(type: string): any[] {
    return this.events.filter((e) => e.data.type === type).map((e) => e.data);
  }

  async waitFor(check: (f: Follower) => boolean, what: string, timeout = 15_000): Promise<void> {
    const started = Date.now();
    while (!check(this)) {
      if (Date.now() - started > timeout) throw new Error(`timed out waiting for ${what}; events: ${JSON.stringify(this.events.map((e) => e.data))}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Waits for a status event (after those already seen when `after` is given). */
  waitStatus(status: string, after = 0): Promise<void> {
    return this.waitFor((f) => {
      const seen = f.of('status').slice(after);
      // A turn that failed will not reach the status waited for: say why at once.
      if (status !== 'failed' && seen.some((s) => s.status === 'failed')) throw new Error(`the session failed: ${JSON.stringify(f.of('error'))}`);
      return seen.some((s) => s.status === status);
    }, `status ${status}`);
  }

  close(): void {
    this.req.destroy();
  }
}

export async function waitUntil(check: () => boolean, what: () => string, timeout = 15_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeout) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
export { alive } from '../helpers/process';

/**
 * A git project for the agent, `repo` inside a temp folder `base` of its own: `files` (paths
 * relative to the project) written, and those `committed` (git add arguments; default all) committed.
 */
export function gitProject(prefix: string, files: Record<string, string>, committed: string[] = ['.']): { base: string; repo: string } {
  const base = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const repo = join(base, 'project');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), text);
  }
  const git = (...a: string[]) => execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...a], { cwd: repo, stdio: 'ignore' });
  git('init', '-q');
  git('add', ...committed);
  git('commit', '-qm', 'init');
  return { base, repo };
}

export interface AgentCliSuite {
  model: ScriptedModel;
  cli: Cli & { configDir: string };
  base: string;
  repo: string;
}

/**
 * A test file's agent CLI (`serve --agent <repo>`) on a gitProject() with the scripted model:
 * started before the file's tests, each test's sessions deleted and script cleared after it,
 * everything removed at the end. The fields are set once the file's tests run.
 */
export function agentCliSuite(prefix: string, files: Record<string, string>, committed?: string[], setup?: (s: AgentCliSuite) => void): AgentCliSuite {
  const suite = {} as AgentCliSuite;
  beforeAll(async () => {
    Object.assign(suite, gitProject(prefix, files, committed));
    setup?.(suite);
    suite.model = await startScriptedModel();
    suite.cli = await startCli(['--agent', suite.repo], `${suite.model.url}/v1`);
  });
  // Each test's sessions end with it: one that failed midway cannot take the next test's script steps.
  afterEach(async () => {
    const { cli, model } = suite;
    const list = await send(cli.url, '/v1/agent/sessions', { headers: bearer(cli.token) });
    for (const s of list.json?.sessions ?? []) await actAs(cli, s.id, 'delete');
    model.script([]);
    model.failures.length = 0;
  });
  afterAll(async () => {
    suite.cli?.child.kill('SIGKILL');
    await suite.model?.close();
    if (suite.base) rmSync(suite.base, { recursive: true, force: true });
    if (suite.cli) rmSync(suite.cli.configDir, { recursive: true, force: true });
  });
  return suite;
}
