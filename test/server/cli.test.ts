/** CONTRACT §7: `deskrelay serve` as a user runs it, the built bundle in a child process. */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chmodSync } from 'node:fs';
import { startAnthropicStandIn } from '../fixtures/providers/anthropic';
import { startOllamaStandIn } from '../fixtures/providers/ollama';
import { startOpenAiStandIn } from '../fixtures/providers/openai';
import { cliSuite, spawnCli, type CliRun } from '../helpers/cli';
import { bearer, chatBody, chatHeaders, closedPort, parseEvents, send } from '../helpers/http';

cliSuite();

interface Run extends CliRun {
  dir: string;
}

function run(args: string[], env: Record<string, string> = {}): Run {
  const dir = env.DESKRELAY_CONFIG_DIR ?? mkdtempSync(join(tmpdir(), 'deskrelay-cli-'));
  // No runner probe unless a test names the ports (real ones such as 11434 may be in use here).
  const r = spawnCli(args, { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: '', ...env });
  return { ...r, dir };
}

/** A config dir of its own holding `config` as its config.json. */
function configDir(config: object): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return { dir, file };
}

async function started(r: Run): Promise<{ url: string; token: string }> {
  await expect.poll(() => r.stdout(), { timeout: 10_000 }).toMatch(/\{"url":"[^"]+","token":"dr_[^"]+"\}/);
  return JSON.parse(/\{"url":"[^"]+","token":"dr_[^"]+"\}/.exec(r.stdout())![0]);
}

describe('deskrelay serve', () => {
  it('"maxConnections" in config.json caps the connections it holds (the rest are closed at once)', async () => {
    const { dir } = configDir({ maxConnections: 2 });
    const r = run(['serve', '--port', '0'], { DESKRELAY_CONFIG_DIR: dir });
    const pairing = await started(r);
    const { port } = new URL(pairing.url);
    const open = async () => {
      const socket = connect(Number(port), '127.0.0.1');
      // A connection over the cap is reset: expected here, not a failure of the test.
      socket.on('error', () => {});
      await new Promise((resolve) => socket.once('connect', resolve));
      return socket;
    };
    const held = [await open(), await open()];
    const third = await open();
    // Past the cap the server closes the new connection without answering it.
    const closed = await new Promise<boolean>((resolve) => {
      third.once('close', () => resolve(true));
      third.write('GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      setTimeout(() => resolve(false), 3_000);
    });
    expect(closed).toBe(true);
    for (const s of held) s.destroy();
    // Once they are gone, the relay serves again.
    await expect.poll(async () => (await send(pairing.url, '/v1/health')).status, { timeout: 5_000 }).toBe(200);
  });

  it('prints the local URL and the pairing payload (no QR code for a loopback address), and serves', async () => {
    const port = await closedPort();
    const r = run(['serve', '--port', String(port)]);
    const pairing = await started(r);
    expect(pairing.url).toBe(`http://127.0.0.1:${port}`);
    const lines = r.stdout().split('\n');
    expect(lines[0]).toBe(`DeskRelay ${JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8')).version} listening on http://127.0.0.1:${port}`);
    // What stands in the phone's way first (loopback: run with --tunnel), then the link and the
    // pairing JSON; no QR code, which a phone could only fail to use (issue 38; with a tunnel
    // there is one: test/tunnel/cli-tunnel.test.ts).
    const text = r.stdout();
    expect(text).toMatch(/A phone cannot reach it: http:\/\/127\.0\.0\.1:\d+ is this computer's loopback address\. Run with --tunnel/);
    expect(text).not.toMatch(/[▀▄█]{3,}/);
    const link = /http:\/\/127\.0\.0\.1:\d+\/#token=dr_\S+/.exec(text)?.[0];
    expect(link).toBeTruthy();
    expect(text.indexOf('A phone cannot reach it')).toBeLessThan(text.indexOf(link!));
    expect(text.indexOf(link!)).toBeLessThan(text.indexOf('{"url"'));
    // The token file holds the same token, and the token never reaches the log (stderr).
    expect(readFileSync(join(r.dir, 'token'), 'utf8')).toBe(`${pairing.token}\n`);
    const info = await send(pairing.url, '/v1/remote/info', { headers: bearer(pairing.token) });
    expect(info.status).toBe(200);
    expect(info.json.workspaces).toBe(0);
    await expect.poll(() => r.stderr()).toContain('GET /v1/remote/info 200');
    expect(r.stderr()).not.toContain(pairing.token);
    r.child.kill('SIGINT');
    expect(await r.exited).toBe(0);
    expect(existsSync(join(r.dir, 'token'))).toBe(false);
  });

  it('with no config and no Ollama, streams one error event saying Ollama is not reachable', async () => {
    const r = run(['serve', '--port', '0']);
    const { url, token } = await started(r);
    const reply = await send(url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() });
    expect(reply.status).toBe(200);
    const events = parseEvents(reply.body);
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('error');
    // Either nothing listens on 11434 here, or something does; the message names it either way.
    expect(events[0].message).toContain('Ollama at http://127.0.0.1:11434');
    r.child.kill('SIGTERM');
    expect(await r.exited).toBe(0);
  });

  it('SIGTERM during a stream: the stream gets a terminal error event, the token file goes, exit 0', async () => {
    const ollama = await startOllamaStandIn({ mode: 'hang-after-headers' });
    const { dir } = configDir({ activeProvider: 'local', providers: [{ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'm' }] });
    try {
      const r = run(['serve', '--port', '0'], { DESKRELAY_CONFIG_DIR: dir });
      const { url, token } = await started(r);
      const stream = send(url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() });
      await expect.poll(() => ollama.requests.length).toBe(1);
      r.child.kill('SIGTERM');
      const reply = await stream;
      expect(parseEvents(reply.body)).toEqual([{ type: 'error', message: expect.stringMatching(/relay is stopping/) }]);
      expect(await r.exited).toBe(0);
      expect(existsSync(join(dir, 'token'))).toBe(false);
      await ollama.lastRequestClosed;
      expect(ollama.lastRequestAborted).toBe(true);
    } finally {
      await ollama.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('uses --config and switches provider when the file changes', async () => {
    const a = await startOllamaStandIn({ reply: ['A'] });
    const b = await startOllamaStandIn({ reply: ['B'] });
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-'));
    const file = join(dir, 'my-config.json');
    const providers = [
      { id: 'a', kind: 'ollama', baseUrl: a.url, model: 'm' },
      { id: 'b', kind: 'ollama', baseUrl: b.url, model: 'm' },
    ];
    writeFileSync(file, JSON.stringify({ activeProvider: 'a', providers }));
    try {
      const r = run(['serve', '--port', '0', '--config', file]);
      const { url, token } = await started(r);
      expect(r.stdout()).toContain(`Active provider: a (Ollama at ${a.url})`);
      const last = async () => parseEvents((await send(url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() })).body).at(-1);
      expect(await last()).toEqual({ type: 'done', content: 'A' });
      writeFileSync(file, JSON.stringify({ activeProvider: 'b', providers }));
      expect(await last()).toEqual({ type: 'done', content: 'B' });
      r.child.kill('SIGTERM');
      expect(await r.exited).toBe(0);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('no active provider', () => {
  it('a config file with providers but no activeProvider: says so at start, info says false, chat gets 412, naming a provider fixes it', async () => {
    const ollama = await startOllamaStandIn({ reply: ['hi'] });
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-'));
    const file = join(dir, 'config.json');
    const providers = [
      { id: 'ollama', kind: 'ollama', baseUrl: ollama.url, model: 'm' },
      { id: 'deskrelay-cloud', kind: 'cloud' },
    ];
    writeFileSync(file, JSON.stringify({ providers }));
    try {
      const r = run(['serve', '--port', '0'], { DESKRELAY_CONFIG_DIR: dir });
      const { url, token } = await started(r);
      // At start: that no provider is active, and how to pick one (the usable ids, the file).
      const notice = r.stdout().split('\n').find((l) => l.startsWith('No provider is active'));
      expect(notice).toBeDefined();
      expect(notice).toContain(`${file} names no "activeProvider"`);
      expect(notice).toContain(`set "activeProvider" in ${file} to one of "ollama"`);
      expect(notice).not.toContain('"deskrelay-cloud"');
      expect(notice).toContain('412 chat.no_provider');
      expect(r.stdout()).not.toContain('Active provider:');

      const info = await send(url, '/v1/remote/info', { headers: bearer(token) });
      expect(info.status).toBe(200);
      expect(info.json.providerConfigured).toBe(false);
      const chat = await send(url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() });
      expect(chat.status).toBe(412);
      expect(chat.json.error.code).toBe('chat.no_provider');
      expect(chat.json.error.message).toMatch(/No provider is active on the desktop/);
      expect(ollama.requests).toHaveLength(0);

      // Following the notice: name one, and the next message uses it without a restart.
      writeFileSync(file, JSON.stringify({ activeProvider: 'ollama', providers }));
      const again = await send(url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() });
      expect(again.status).toBe(200);
      expect(parseEvents(again.body).at(-1)).toEqual({ type: 'done', content: 'hi' });
      expect((await send(url, '/v1/remote/info', { headers: bearer(token) })).json.providerConfigured).toBe(true);
      r.child.kill('SIGTERM');
      expect(await r.exited).toBe(0);
    } finally {
      await ollama.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('no config file at all keeps the built-in default: local Ollama, providerConfigured true', async () => {
    const r = run(['serve', '--port', '0']);
    const { url, token } = await started(r);
    expect(r.stdout()).toContain('Active provider: local (Ollama at http://127.0.0.1:11434)');
    expect(r.stdout()).not.toContain('No provider is active');
    const info = await send(url, '/v1/remote/info', { headers: bearer(token) });
    expect(info.json.providerConfigured).toBe(true);
    r.child.kill('SIGTERM');
    expect(await r.exited).toBe(0);
  });

  it('an activeProvider naming no configured provider: the notice says which and lists the choices', async () => {
    const { dir, file } = configDir({ activeProvider: 'gone', providers: [{ id: 'a', kind: 'ollama' }, { id: 'b', kind: 'ollama' }] });
    try {
      const r = run(['serve', '--port', '0', '--config', file]);
      const { url, token } = await started(r);
      expect(r.stdout()).toContain(`No provider is active: "activeProvider" is "gone", which is not among the providers. Chats get 412 chat.no_provider until you set "activeProvider" in ${file} to one of "a", "b"`);
      const chat = await send(url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() });
      expect(chat.status).toBe(412);
      r.child.kill('SIGTERM');
      expect(await r.exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('start-up failures: exit 1 with exactly one line on stderr', () => {
  const expectOneLine = async (r: Run, pattern: RegExp) => {
    expect(await r.exited).toBe(1);
    const lines = r.stderr().split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(pattern);
    expect(r.stdout()).not.toContain('dr_');
  };

  it('when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as import('node:net').AddressInfo).port;
    try {
      const r = run(['serve', '--port', String(port)]);
      await expectOneLine(r, new RegExp(`^deskrelay: Port ${port} on 127\\.0\\.0\\.1 is already in use.*--port`));
      expect(existsSync(join(r.dir, 'token'))).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it('when --config names a missing file', async () => {
    await expectOneLine(run(['serve', '--port', '0', '--config', '/nonexistent/deskrelay.json']), /^deskrelay: config file \/nonexistent\/deskrelay\.json does not exist$/);
  });

  it('when --config is unreadable JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-'));
    writeFileSync(join(dir, 'c.json'), '{ nope');
    await expectOneLine(run(['serve', '--port', '0', '--config', join(dir, 'c.json')]), /^deskrelay: config file .*c\.json is invalid: it is not valid JSON/);
  });

  it('when <config dir>/config.json is invalid', async () => {
    const { dir } = configDir({ providers: [{ id: 'x', kind: 'banana' }] });
    await expectOneLine(run(['serve', '--port', '0'], { DESKRELAY_CONFIG_DIR: dir }), /providers\[0\]\.kind must be one of/);
  });

  it('on a bad flag', async () => {
    await expectOneLine(run(['serve', '--port', 'abc']), /^deskrelay: --port must be a number/);
    await expectOneLine(run(['serve', '--colour']), /^deskrelay: Unknown option '--colour'/);
  });
});

const portOf = (url: string) => new URL(url).port;
const stdoutLines = (r: Run) => r.stdout().split('\n').filter(Boolean);

describe('deskrelay serve without a config file finds a local runner', () => {
  it('one runner up (LM Studio here): uses it, says which and how to pin it, and chats through it', async () => {
    const lmStudio = await startOpenAiStandIn();
    const down = await closedPort();
    try {
      const r = run(['serve', '--port', '0'], { DESKRELAY_RUNNER_PORTS: `ollama=${down},lm-studio=${portOf(lmStudio.url)}` });
      const { url, token } = await started(r);
      const file = join(r.dir, 'config.json');
      const record = { id: 'local', kind: 'openai-compatible', baseUrl: lmStudio.url, model: 'auto' };
      expect(stdoutLines(r)).toContain(
        `No config file at ${file}: found LM Studio at ${lmStudio.url} (2 models, "auto" picks "qwen2.5-7b-instruct") and using it. To pin it, write this to ${file}: ${JSON.stringify({ activeProvider: 'local', providers: [record] })}`,
      );
      expect(r.stdout()).toContain(`Active provider: local (OpenAI-compatible server at ${lmStudio.url})`);
      const reply = await send(url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() });
      expect(parseEvents(reply.body).at(-1)).toMatchObject({ type: 'done', content: 'Hello from the server!' });
      expect(lmStudio.requests.at(-1)?.body.model).toBe('qwen2.5-7b-instruct');
      r.child.kill('SIGTERM');
      expect(await r.exited).toBe(0);
    } finally {
      await lmStudio.close();
    }
  });

  it('none up: keeps the default Ollama and says nothing answered', async () => {
    const [a, b] = [await closedPort(), await closedPort()];
    const r = run(['serve', '--port', '0'], { DESKRELAY_RUNNER_PORTS: `ollama=${a},jan=${b}` });
    await started(r);
    expect(stdoutLines(r)).toContain(
      `No config file at ${join(r.dir, 'config.json')}, and no local runner answered on 127.0.0.1 (Ollama ${a}, Jan ${b}): using the default, Ollama at http://127.0.0.1:11434. Start a runner, or write ${join(r.dir, 'config.json')} to name a provider.`,
    );
    expect(r.stdout()).toContain('Active provider: local (Ollama at http://127.0.0.1:11434)');
    r.child.kill('SIGTERM');
    expect(await r.exited).toBe(0);
  });

  it('a config file is used as written: no probe, no notice', async () => {
    const ollama = await startOllamaStandIn();
    const { dir } = configDir({ activeProvider: 'a', providers: [{ id: 'a', kind: 'ollama', baseUrl: ollama.url }] });
    try {
      const r = run(['serve', '--port', '0'], { DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: `ollama=${portOf(ollama.url)}` });
      await started(r);
      expect(r.stdout()).not.toContain('No config file');
      expect(ollama.requests).toHaveLength(0);
      r.child.kill('SIGTERM');
      await r.exited;
    } finally {
      await ollama.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a vscode-lm provider: the chat is one error event saying it needs VS Code', async () => {
    const { dir } = configDir({ activeProvider: 'copilot', providers: [{ id: 'copilot', kind: 'vscode-lm', model: 'copilot' }] });
    try {
      const r = run(['serve', '--port', '0'], { DESKRELAY_CONFIG_DIR: dir });
      const { url, token } = await started(r);
      const events = parseEvents((await send(url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() })).body);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: 'error' });
      expect(events[0].message).toBe(
          'Provider "copilot" is VS Code\'s language models, which only the DeskRelay extension in VS Code can use; deskrelay serve cannot. Run the relay from VS Code, or make another provider active ("activeProvider" in config.json).',
      );
      r.child.kill('SIGTERM');
      await r.exited;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deskrelay doctor', () => {
  /** A stand-in cloudflared that answers --version as the real one does. */
  function fakeCloudflared(dir: string): string {
    const file = join(dir, 'cloudflared');
    writeFileSync(file, '#!/bin/sh\necho "cloudflared version 2025.8.1 (built 2025-08-21-1535 UTC)"\n');
    chmodSync(file, 0o755);
    return file;
  }

  it('all checks pass: one line per check, exit 0', async () => {
    const ollama = await startOllamaStandIn();
    const anthropic = await startAnthropicStandIn({ keys: ['sk-ant-good-0123456789'] });
    const lm = await startOpenAiStandIn();
    const { dir, file } = configDir({
      activeProvider: 'local',
      providers: [
        { id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'qwen3' },
        { id: 'claude', kind: 'anthropic', baseUrl: anthropic.url, model: 'claude-haiku-4-5-20251001', apiKeyEnv: 'ANTHROPIC_KEY' },
        { id: 'lm', kind: 'openai-compatible', baseUrl: lm.url },
        { id: 'cloud', kind: 'cloud' },
      ],
    });
    writeFileSync(join(dir, 'token'), 'dr_x\n', { mode: 0o600 });
    const cf = fakeCloudflared(dir);
    try {
      const r = run(['doctor', '--cloudflared', cf], { DESKRELAY_CONFIG_DIR: dir, ANTHROPIC_KEY: 'sk-ant-good-0123456789' });
      expect(await r.exited).toBe(0);
      expect(stdoutLines(r)).toEqual([
        `[ok  ] config file: ${file} is valid: 4 providers ("local", "claude", "lm", "cloud"), active "local"`,
        `[ok  ] provider "local" reachable: Ollama at ${ollama.url} answered; 2 models listed`,
        `[ok  ] provider "local" model: "qwen3" is available`,
        `[ok  ] provider "claude" key: ANTHROPIC_KEY is set`,
        `[ok  ] provider "claude" reachable: Anthropic at ${anthropic.url} answered and accepted the key; 2 models listed`,
        `[ok  ] provider "claude" model: "claude-haiku-4-5-20251001" is available`,
        `[ok  ] provider "lm" reachable: OpenAI-compatible server at ${lm.url} answered; 2 models listed`,
        `[ok  ] provider "lm" model: "auto" picks "qwen2.5-7b-instruct"`,
        `[ok  ] provider "cloud": the DeskRelay cloud provider: the phone uses it directly, nothing to check on this computer`,
        `[ok  ] cloudflared: ${cf}, version 2025.8.1`,
        `[ok  ] token file: ${join(dir, 'token')} has mode 600 (yours alone)`,
        'All checks passed.',
      ]);
      expect(r.stdout()).not.toContain('sk-ant-good');
    } finally {
      await Promise.all([ollama.close(), anthropic.close(), lm.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('failing checks say what to do, and the exit code is 1', async () => {
    const ollama = await startOllamaStandIn();
    const anthropic = await startAnthropicStandIn({ keys: ['sk-ant-good-0123456789'] });
    const down = await closedPort();
    const { dir, file } = configDir({
      activeProvider: 'copilot',
      providers: [
        { id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'mistral' },
        { id: 'claude', kind: 'anthropic', baseUrl: anthropic.url, model: 'claude-x', apiKeyEnv: 'ANTHROPIC_KEY' },
        { id: 'gem', kind: 'gemini', model: 'gemini-2.5-pro', apiKeyEnv: 'GEMINI_KEY' },
        { id: 'lm', kind: 'openai-compatible', baseUrl: `http://127.0.0.1:${down}/v1` },
        { id: 'copilot', kind: 'vscode-lm' },
      ],
    });
    writeFileSync(join(dir, 'token'), 'dr_x\n');
    chmodSync(join(dir, 'token'), 0o644);
    try {
      const r = run(['doctor', '--cloudflared', join(dir, 'no-cloudflared')], { DESKRELAY_CONFIG_DIR: dir, ANTHROPIC_KEY: 'sk-ant-wrong-9876543210' });
      expect(await r.exited).toBe(1);
      expect(stdoutLines(r)).toEqual([
        `[ok  ] config file: ${file} is valid: 5 providers ("local", "claude", "gem", "lm", "copilot"), active "copilot"`,
        `[ok  ] provider "local" reachable: Ollama at ${ollama.url} answered; 2 models listed`,
        `[FAIL] provider "local" model: "mistral" is not among the models Ollama at ${ollama.url} lists ("qwen3:latest", "llama3.2:latest"); run "ollama pull mistral", or set "model" in config.json to one of them`,
        `[ok  ] provider "claude" key: ANTHROPIC_KEY is set`,
        `[FAIL] provider "claude" reachable: Anthropic at ${anthropic.url} rejected the API key (HTTP 401: invalid x-api-key [redacted]); set the environment variable ANTHROPIC_KEY before starting deskrelay serve`,
        `[FAIL] provider "gem" key: the environment variable GEMINI_KEY is not set; set the environment variable GEMINI_KEY before starting deskrelay serve`,
        `[FAIL] provider "lm" reachable: OpenAI-compatible server at http://127.0.0.1:${down}/v1 is not reachable (ECONNREFUSED)`,
        `[FAIL] provider "copilot": VS Code's language models work only in the DeskRelay VS Code extension; deskrelay serve answers its chats with an error. Make another provider active ("activeProvider" in config.json)`,
        `[FAIL] cloudflared: cloudflared was not found at ${join(dir, 'no-cloudflared')} (the path given by the cloudflared path you set (deskrelay.cloudflaredPath / --cloudflared)): no such file. Fix or clear the path, or install cloudflared there.`,
        `[FAIL] token file: ${join(dir, 'token')} has mode 644, readable by others; run: chmod 600 ${join(dir, 'token')}`,
        '7 checks failed.',
      ]);
      expect(r.stdout()).not.toContain('sk-ant-wrong');
    } finally {
      await Promise.all([ollama.close(), anthropic.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('no config file: names the runner serve would use; no cloudflared on PATH is a warning; no token file is fine', async () => {
    const ollama = await startOllamaStandIn();
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-'));
    try {
      const r = run(['doctor'], { DESKRELAY_CONFIG_DIR: dir, PATH: join(dir, 'empty-bin'), DESKRELAY_RUNNER_PORTS: `ollama=${portOf(ollama.url)}` });
      expect(await r.exited).toBe(0);
      expect(stdoutLines(r)).toEqual([
        `[ok  ] config file: none at ${join(dir, 'config.json')}; deskrelay serve uses the Ollama it found (write the file to pin a provider)`,
        `[ok  ] provider "local" reachable: Ollama at ${ollama.url} answered; 2 models listed`,
        `[ok  ] provider "local" model: "auto" picks "qwen3:latest"`,
        '[warn] cloudflared: not found on PATH (needed only for --tunnel); install it (brew install cloudflared, winget install --id Cloudflare.cloudflared, or https://github.com/cloudflare/cloudflared/releases/latest) or pass --cloudflared PATH',
        `[ok  ] token file: none at ${join(dir, 'token')} (deskrelay serve writes it, readable by you alone, while it runs)`,
        'All checks passed.',
      ]);
    } finally {
      await ollama.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an invalid config file, a missing --config, and a missing active provider fail', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-'));
    const file = join(dir, 'config.json');
    try {
      writeFileSync(file, '{ nope');
      let r = run(['doctor'], { DESKRELAY_CONFIG_DIR: dir, PATH: join(dir, 'empty-bin') });
      expect(await r.exited).toBe(1);
      expect(stdoutLines(r)[0]).toMatch(/^\[FAIL\] config file: config file .*config\.json is invalid: it is not valid JSON .*; fix it \(deskrelay serve refuses to start with it\)$/);
      r = run(['doctor', '--config', join(dir, 'nope.json')], { DESKRELAY_CONFIG_DIR: dir, PATH: join(dir, 'empty-bin') });
      expect(await r.exited).toBe(1);
      expect(stdoutLines(r)[0]).toBe(`[FAIL] config file: ${join(dir, 'nope.json')} does not exist; fix the --config path, or leave it out to use ${file}`);
      writeFileSync(file, JSON.stringify({ activeProvider: 'gone', providers: [{ id: 'cloud', kind: 'cloud' }] }));
      r = run(['doctor'], { DESKRELAY_CONFIG_DIR: dir, PATH: join(dir, 'empty-bin') });
      expect(await r.exited).toBe(1);
      expect(stdoutLines(r)[0]).toBe(`[FAIL] config file: ${file} is valid but its "activeProvider" "gone" is not among the providers ("cloud"); set "activeProvider" to one of "cloud"`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
