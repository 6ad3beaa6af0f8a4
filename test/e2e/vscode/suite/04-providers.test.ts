import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { startAnthropicStandIn, type AnthropicStandIn } from '../../../fixtures/providers/anthropic';
import { startOllamaStandIn, type OllamaStandIn } from '../../../fixtures/providers/ollama';
import { startOpenAiStandIn, type OpenAiStandIn } from '../../../fixtures/providers/openai';
import { startTranscriptionStandIn, toneWav } from '../../../fixtures/transcription/server';
import { api, cfg, chat, freePort, readToken, rememberSecret, reply, setSetting, waitFor, type Status, run } from './helpers';

const portOf = (url: string) => new URL(url).port;
const providers = () => cfg().get<any[]>('providers') ?? [];

/** Starts the relay on a free port with no provider configured; resolves with its base URL. */
async function startWithoutProviders(): Promise<string> {
  const port = await freePort();
  await setSetting('port', port);
  await setSetting('providers', []);
  const s = await run<Status>('deskrelay.start');
  assert.equal(s.running, true);
  rememberSecret(readToken()!);
  return `http://127.0.0.1:${port}`;
}

/** Clears what these suites set, so the files after this one start from the defaults. */
async function stopAndForgetProviders(): Promise<void> {
  await run('deskrelay.stop');
  for (const key of ['port', 'providers', 'activeProvider']) await setSetting(key, undefined);
}

interface AddResult {
  id?: string;
  config?: any;
  models?: string[];
  active?: boolean;
  error?: string;
}

describe('Add, remove and edit providers (against stand-in runners on loopback)', function () {
  this.timeout(30_000);
  let ollama: OllamaStandIn;
  let lmStudio: OpenAiStandIn;
  let anthropic: AnthropicStandIn;
  let closed: number;
  let base: string;
  const GOOD_KEY = `sk-ant-e2e-good-${Math.random().toString(36).slice(2)}`;
  const BAD_KEY = `sk-ant-e2e-bad-${Math.random().toString(36).slice(2)}`;

  before(async () => {
    await api();
    rememberSecret(GOOD_KEY);
    rememberSecret(BAD_KEY);
    ollama = await startOllamaStandIn();
    lmStudio = await startOpenAiStandIn();
    anthropic = await startAnthropicStandIn({ keys: [GOOD_KEY] });
    closed = await freePort();
    // The extension host is this process: the probe reads the stand-ins' ports from here.
    process.env.DESKRELAY_RUNNER_PORTS = `ollama=${portOf(ollama.url)},lm-studio=${portOf(lmStudio.url)},jan=${closed}`;
    base = await startWithoutProviders();
  });

  after(async () => {
    delete process.env.DESKRELAY_RUNNER_PORTS;
    await stopAndForgetProviders();
    await ollama?.close();
    await lmStudio?.close();
    await anthropic?.close();
  });

  it('finds the local runners that answer, lists their models, writes the provider to settings and makes it active', async () => {
    const r = await run<AddResult>('deskrelay.addProvider', { kind: 'local', runner: 'lm-studio', model: 'qwen2.5-7b-instruct', id: 'lms', makeActive: true });
    assert.equal(r.error, undefined);
    assert.deepEqual(r.models, ['qwen2.5-7b-instruct', 'text-embedding-nomic-embed-text-v1.5']);
    assert.deepEqual(providers(), [{ id: 'lms', kind: 'openai-compatible', baseUrl: lmStudio.url, model: 'qwen2.5-7b-instruct' }]);
    assert.equal(cfg().get('activeProvider'), 'lms');
    assert.equal(reply(await chat(base, readToken()!)), 'Hello from the server!');
    assert.equal(lmStudio.requests.at(-1)?.body.model, 'qwen2.5-7b-instruct');

    const o = await run<AddResult>('deskrelay.addProvider', { kind: 'local', runner: 'ollama', model: 'auto', id: 'ollama', makeActive: false });
    assert.deepEqual(o.models, ['qwen3:latest', 'llama3.2:latest']);
    assert.deepEqual(providers()[1], { id: 'ollama', kind: 'ollama', baseUrl: ollama.url, model: 'auto' });
    assert.equal(cfg().get('activeProvider'), 'lms', 'not made active');
  });

  it('a runner that does not answer is not offered; none answering says so', async () => {
    const jan = await run<AddResult>('deskrelay.addProvider', { kind: 'local', runner: 'jan', id: 'jan', makeActive: false });
    assert.match(jan.error ?? '', /jan did not answer on 127\.0\.0\.1\. Found: Ollama, LM Studio\./);
    process.env.DESKRELAY_RUNNER_PORTS = `ollama=${closed}`;
    try {
      const none = await run<AddResult>('deskrelay.addProvider', { kind: 'local', id: 'none', makeActive: false });
      assert.match(none.error ?? '', new RegExp(`no local runner answered on 127\\.0\\.0\\.1 \\(Ollama ${closed}\\)`));
    } finally {
      process.env.DESKRELAY_RUNNER_PORTS = `ollama=${portOf(ollama.url)},lm-studio=${portOf(lmStudio.url)},jan=${closed}`;
    }
    assert.deepEqual(providers().map((p) => p.id), ['lms', 'ollama']);
  });

  it('a hosted key is checked with one request before saving: a rejected key saves nothing, an accepted one goes to SecretStorage', async () => {
    const bad = await run<AddResult>('deskrelay.addProvider', { kind: 'anthropic', baseUrl: anthropic.url, key: BAD_KEY, model: 'claude-haiku-4-5-20251001', id: 'claude', makeActive: true });
    assert.match(bad.error ?? '', /rejected the API key \(HTTP 401/);
    assert.equal((bad.error ?? '').includes(BAD_KEY), false, 'the key is redacted');
    assert.equal(providers().some((p) => p.id === 'claude'), false);
    assert.equal(anthropic.requests.at(-1)?.path, '/v1/models?limit=1000');

    const good = await run<AddResult>('deskrelay.addProvider', { kind: 'anthropic', baseUrl: anthropic.url, key: GOOD_KEY, model: 'claude-haiku-4-5-20251001', id: 'claude', makeActive: true });
    assert.equal(good.error, undefined);
    assert.deepEqual(providers().find((p) => p.id === 'claude'), { id: 'claude', kind: 'anthropic', baseUrl: anthropic.url, model: 'claude-haiku-4-5-20251001' });
    assert.equal(JSON.stringify(providers()).includes(GOOD_KEY), false, 'no key in settings');
    const r = await chat(base, readToken()!);
    assert.equal(r.events.at(-1)?.type, 'done');
    assert.equal(anthropic.requests.at(-1)?.headers['x-api-key'], GOOD_KEY);
  });

  it('Edit Provider Model sets the model; Remove Provider takes the entry and its key, and the active one falls back', async () => {
    assert.equal(await run('deskrelay.editModel', 'lms', 'text-embedding-nomic-embed-text-v1.5'), 'text-embedding-nomic-embed-text-v1.5');
    assert.equal(providers().find((p) => p.id === 'lms').model, 'text-embedding-nomic-embed-text-v1.5');
    assert.equal(await run('deskrelay.removeProvider', 'claude', true), true);
    assert.deepEqual(providers().map((p) => p.id), ['lms', 'ollama']);
    assert.equal(cfg().get('activeProvider'), 'lms');
    // Added again without a key: the old key went with the provider.
    await setSetting('providers', [...providers(), { id: 'claude', kind: 'anthropic', baseUrl: anthropic.url, model: 'claude-haiku-4-5-20251001' }]);
    await setSetting('activeProvider', 'claude');
    const r = await chat(base, readToken()!);
    assert.equal(r.events.at(-1)?.type, 'error');
    assert.match(r.events.at(-1)?.message, /needs an API key/);
  });

  it('Add Provider makes an OpenAI-compatible server the transcriber (deskrelay.transcription); the phone sees it and its recording is transcribed', async () => {
    const stt = await startTranscriptionStandIn();
    try {
      const r = await run<AddResult & { transcription?: string }>('deskrelay.addProvider', {
        kind: 'openai-compatible', baseUrl: `${stt.url}/v1`, key: '', model: 'whisper-1', id: 'stt', makeActive: false, transcriptionModel: 'whisper-1',
      });
      assert.equal(r.transcription, 'whisper-1', JSON.stringify(r));
      assert.deepEqual(cfg().get('transcription'), { provider: 'stt', model: 'whisper-1' });
      const token = readToken()!;
      const view = (await (await fetch(`${base}/v1/providers`, { headers: { authorization: `Bearer ${token}` } })).json()) as { transcription?: boolean };
      assert.equal(view.transcription, true);
      const transcribe = () => {
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(toneWav(0.2))], { type: 'audio/wav' }), 'memo.wav');
        form.append('model', 'whisper-1');
        return fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
      };
      const ok = await transcribe();
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { text: 'Hello from the microphone.' });
      assert.equal(stt.received.at(-1)?.fields.model, 'whisper-1');
      // Removing the transcriber's provider clears the setting too.
      assert.equal(await run('deskrelay.removeProvider', 'stt', true), true);
      assert.equal(cfg().get('transcription'), null);
      const none = await transcribe();
      assert.equal(none.status, 412);
      assert.match(((await none.json()) as { error: { message: string } }).error.message, /deskrelay\.transcription/);
    } finally {
      await setSetting('transcription', undefined);
      if (providers().some((p) => p.id === 'stt')) await run('deskrelay.removeProvider', 'stt', true);
      await stt.close();
    }
  });

  it("a workspace's settings cannot choose the phone's provider, and a switch from the phone goes to user settings (issue 21)", async () => {
    const folder = vscode.workspace.workspaceFolders?.[0];
    assert.ok(folder, 'the suite runs in a folder');
    const dir = join(folder.uri.fsPath, '.vscode');
    const file = join(dir, 'settings.json');
    mkdirSync(dir, { recursive: true });
    const saved = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    const workspaceFile = JSON.stringify({ 'deskrelay.activeProvider': 'ollama' }, null, 2);
    try {
      await setSetting('activeProvider', 'lms');
      writeFileSync(file, workspaceFile);
      // VS Code reads the file again when it changes; give it the time to (not) apply it.
      await new Promise((r) => setTimeout(r, 2_000));
      assert.equal(cfg().get('activeProvider'), 'lms', 'the workspace chose the provider');
      await setSetting('allowPhoneProviderSwitch', true);
      const res = await fetch(`${base}/v1/providers/active`, {
        method: 'PUT',
        headers: { Authorization: `Bearer ${readToken()}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ id: 'claude' }),
      });
      assert.equal(res.status, 200);
      assert.equal(cfg().inspect('activeProvider')?.globalValue, 'claude');
      assert.equal(cfg().get('activeProvider'), 'claude');
      assert.equal(readFileSync(file, 'utf8'), workspaceFile, "the switch wrote into the workspace's settings");
    } finally {
      await setSetting('allowPhoneProviderSwitch', undefined);
      if (saved === undefined) rmSync(file, { force: true });
      else writeFileSync(file, saved);
    }
  });
});

describe("VS Code's language models (vscode-lm) with a stand-in chat model", function () {
  this.timeout(30_000);
  let base: string;
  let standIn: {
    requests: {
      family: string;
      extensionId: string;
      messages: { role: number; text: string; parts: { type: string; callId?: string; name?: string; input?: unknown; text?: string; value?: string }[] }[];
      tools: { name: string; description: string; inputSchema: unknown }[];
      toolMode?: number;
    }[];
    cancelled: number;
  };

  before(async function () {
    await api();
    const ext = vscode.extensions.getExtension('deskrelay-test.lm-standin');
    assert.ok(ext, 'the test extension test/e2e/vscode/lm-standin is not loaded');
    standIn = await ext.activate();
    const models = await waitFor('the stand-in chat models', async () => {
      const found = await vscode.lm.selectChatModels({ vendor: 'standin' });
      return found.length === 2 ? found : undefined;
    });
    assert.deepEqual(models.map((m) => m.family).sort(), ['echo', 'guarded']);
    base = await startWithoutProviders();
  });

  after(async () => {
    await stopAndForgetProviders();
  });

  it('Add Provider offers VS Code models; the phone gets a streamed reply from the stand-in', async () => {
    const r = await run<AddResult>('deskrelay.addProvider', { kind: 'vscode-lm', model: 'standin/echo', id: 'vscode', makeActive: true });
    assert.equal(r.error, undefined);
    assert.ok(r.models?.includes('standin-echo'), JSON.stringify(r.models));
    assert.deepEqual(providers(), [{ id: 'vscode', kind: 'vscode-lm', model: 'standin/echo' }]);
    const n = standIn.requests.length;
    const c = await fetch(`${base}/v1/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${readToken()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }] }),
    });
    const events = (await c.text()).split('\n\n').filter((b) => b.startsWith('data: ')).map((b) => JSON.parse(b.slice(6)));
    assert.deepEqual(events.filter((e) => e.type !== 'done').map((e) => e.delta), ['Hello', ' from', ' the', ' VS Code', ' stand-in', '!']);
    assert.equal(events.at(-1).type, 'done');
    assert.equal(events.at(-1).content, 'Hello from the VS Code stand-in!');
    assert.equal(standIn.requests.length, n + 1);
    assert.equal(standIn.requests.at(-1)!.extensionId, 'deskrelay.deskrelay');
    assert.equal(standIn.requests.at(-1)!.messages.at(-1)!.text, 'Be brief.\n\nhi');
  });

  it("a failing model's own message is the stream's one error event", async () => {
    const r = await chat(base, readToken()!, 'please fail');
    assert.equal(r.events.length, 1);
    assert.equal(r.events[0].type, 'error');
    assert.match(r.events[0].message, /Stand-in quota exceeded: try again tomorrow\./);
  });

  it('tool calls through the OpenAI door: LanguageModelChatTool in, LanguageModelToolCallPart out, the result back as LanguageModelToolResultPart', async () => {
    const weather = { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
    const completions = (body: object) =>
      fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${readToken()}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const ask = [{ role: 'user', content: 'please use a tool' }];
    const first = await completions({ model: 'x', messages: ask, tools: [{ type: 'function', function: weather }] });
    assert.equal(first.status, 200);
    const answer = (await first.json()) as { choices: { finish_reason: string; message: { content: string | null; tool_calls: { id: string; type: string; function: { name: string; arguments: string } }[] } }[] };
    assert.equal(answer.choices[0].finish_reason, 'tool_calls');
    assert.equal(answer.choices[0].message.content, 'Let me check.');
    const [call] = answer.choices[0].message.tool_calls;
    assert.deepEqual({ type: call.type, name: call.function.name, args: JSON.parse(call.function.arguments) }, { type: 'function', name: 'get_weather', args: { city: 'Paris' } });
    // The model got the tool as VS Code's LanguageModelChatTool, in Auto mode (LanguageModelChatToolMode.Auto = 1).
    assert.deepEqual(standIn.requests.at(-1)!.tools, [{ name: 'get_weather', description: weather.description, inputSchema: weather.parameters }]);
    assert.equal(standIn.requests.at(-1)!.toolMode, 1);
    assert.equal(call.id, `standin-call-${standIn.requests.length}`);

    const second = await completions({
      model: 'x',
      stream: true,
      tools: [{ type: 'function', function: weather }],
      messages: [...ask, answer.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 18 °C' }],
    });
    const chunks = (await second.text())
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map((b) => JSON.parse(b.slice(6)));
    assert.equal(chunks.map((c) => c.choices[0].delta.content ?? '').join(''), 'The tool said: sunny, 18 °C');
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
    // The history reached the model as VS Code's parts: the call in an Assistant message, the result in a User message.
    const sent = standIn.requests.at(-1)!.messages;
    assert.deepEqual(sent.at(-2)!.parts, [
      { type: 'text', value: 'Let me check.' },
      { type: 'call', callId: call.id, name: 'get_weather', input: { city: 'Paris' } },
    ]);
    assert.deepEqual(sent.at(-1)!.parts, [{ type: 'result', callId: call.id, text: 'sunny, 18 °C' }]);
  });

  // What reaches the model: DeskRelay cancels the CancellationToken it passed to sendRequest, but
  // VS Code 1.96 does not forward that to the provider once the request has started: the main
  // thread's $tryStartChatRequest answers as soon as the request is under way (its stream is read
  // in a detached loop), and the RPC layer stops listening to a call's token once the call has
  // answered, so the provider's token is never cancelled (seen in code-server 4.96.4's
  // workbench.js and extensionHostProcess.js). What a phone's leaving does control is DeskRelay's
  // side, which this test checks: the reply stops at once and its stream slot is free.
  it('the phone going away ends the chat at once: DeskRelay stops reading the model and frees the slot', async () => {
    await setSetting('maxConcurrentStreams', 1);
    try {
      const controller = new AbortController();
      const res = await fetch(`${base}/v1/chat/stream`, {
        method: 'POST',
        signal: controller.signal,
        headers: { authorization: `Bearer ${readToken()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'slow please' }] }),
      });
      const reader = res.body!.getReader();
      const first = await reader.read();
      assert.match(new TextDecoder().decode(first.value), /tick 0/);
      // While the slow reply runs, the one slot is taken.
      const busy = await fetch(`${base}/v1/chat/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${readToken()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(busy.status, 429);
      await busy.text();
      controller.abort();
      await reader.cancel().catch(() => {});
      // The model goes on ticking (see above), yet the next message is served within a second.
      const next = await waitFor('the slot to be free', async () => {
        const r = await chat(base, readToken()!);
        return r.status === 200 ? r : undefined;
      }, 2_000);
      assert.equal(reply(next), 'Hello from the VS Code stand-in!');
    } finally {
      await setSetting('maxConcurrentStreams', undefined);
    }
  });

  it('without consent the phone gets an error event saying what to run on the desktop, and no request is made', async () => {
    assert.equal(await run('deskrelay.editModel', 'vscode', 'standin/guarded'), 'standin/guarded');
    const n = standIn.requests.length;
    const r = await chat(base, readToken()!);
    assert.equal(r.events.length, 1);
    assert.equal(r.events[0].type, 'error');
    assert.match(r.events[0].message, /has not allowed DeskRelay to use its model Stand-in guarded \(standin\/guarded\) yet\. On the desktop, run "DeskRelay: Allow Phone Chats with VS Code Models"/);
    assert.equal(standIn.requests.length, n, 'no request reached the model');
  });

  it('a model that is not there is named, with the models VS Code has', async () => {
    await run('deskrelay.editModel', 'vscode', 'nosuch/model');
    const r = await chat(base, readToken()!);
    assert.equal(r.events[0].type, 'error');
    assert.match(r.events[0].message, /no model of VS Code's language models matches "nosuch\/model" \(provider "vscode"\); available: .*Stand-in echo \(standin\/echo\)/);
  });
});
