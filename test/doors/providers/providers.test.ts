/**
 * Provider and model choice from the phone (issue 13), through real HTTP on a relay whose
 * providers come from the CLI's config.json (ConfigFile): GET /v1/providers, GET
 * /v1/providers/<id>/models, PUT /v1/providers/active, every refusal, and a switch reflected in
 * the next stream, /v1/remote/info and the file, while a stream in flight keeps its provider.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigFile } from '../../../server/src/cli/config';
import { silentLogger } from '../../../server/src/logger';
import { ANTHROPIC_DEFAULT_MODELS, startAnthropicStandIn, type AnthropicStandIn } from '../../fixtures/providers/anthropic';
import { GEMINI_DEFAULT_MODELS, startGeminiStandIn, type GeminiStandIn } from '../../fixtures/providers/gemini';
import { OLLAMA_DEFAULT_REPLY, startOllamaStandIn, type OllamaStandIn } from '../../fixtures/providers/ollama';
import { OPENAI_DEFAULT_REPLY, startOpenAiStandIn, type OpenAiStandIn } from '../../fixtures/providers/openai';
import { bearer, chatBody, chatHeaders, closedPort, parseEvents, send, type Reply } from '../../helpers/http';
import { startRelay, type TestRelay } from '../../helpers/relay';

const KEY = 'sk-ant-SECRET-providers-0123456789';
let ollama: OllamaStandIn;
let lmstudio: OpenAiStandIn;
let anthropic: AnthropicStandIn;
let gemini: GeminiStandIn;
let deadPort: number;
let dir: string;
let file: string;
let t: TestRelay;

function writeConfig(extra: Record<string, unknown> = {}): void {
  const config = {
    // A field DeskRelay does not read: a switch keeps it.
    $comment: 'my relay',
    activeProvider: 'local',
    workspaces: 3,
    providers: [
      { id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'auto' },
      { id: 'lmstudio', kind: 'openai-compatible', baseUrl: lmstudio.url, model: 'auto', apiKeyEnv: 'LMSTUDIO_KEY' },
      { id: 'claude', kind: 'anthropic', baseUrl: anthropic.url, model: 'claude-sonnet-4-5', apiKeyEnv: 'ANTHROPIC_API_KEY' },
      { id: 'gemini', kind: 'gemini', baseUrl: gemini.url, model: 'gemini-2.5-flash', apiKeyEnv: 'GEMINI_API_KEY' },
      { id: 'down', kind: 'ollama', baseUrl: `http://127.0.0.1:${deadPort}`, model: 'qwen3' },
      { id: 'deskrelay-cloud', kind: 'cloud' },
    ],
    ...extra,
  };
  writeFileSync(file, `${JSON.stringify(config, null, 4)}\n`, { mode: 0o600 });
}

beforeAll(async () => {
  [ollama, lmstudio, anthropic, gemini] = await Promise.all([startOllamaStandIn(), startOpenAiStandIn(), startAnthropicStandIn(), startGeminiStandIn()]);
  deadPort = await closedPort();
  dir = mkdtempSync(join(tmpdir(), 'deskrelay-providers-'));
  file = join(dir, 'config.json');
  writeConfig();
  const config = new ConfigFile(file, silentLogger, true);
  t = await startRelay({
    providers: config,
    keys: { get: async (p) => (p.apiKeyEnv === 'LMSTUDIO_KEY' ? undefined : KEY), howToSet: (p) => `set ${p.apiKeyEnv}` },
    workspaces: () => config.current().workspaces,
  });
});
afterAll(async () => {
  await t.close();
  await Promise.all([ollama, lmstudio, anthropic, gemini].map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => writeConfig());
afterEach(async () => {
  ollama.set({});
  await expect.poll(() => t.relay.activeStreams).toBe(0);
});

const get = (path: string, token: string | null = t.token) => send(t.url, path, { headers: token === null ? {} : bearer(token) });
const put = (body: unknown, headers: Record<string, string> = {}) =>
  send(t.url, '/v1/providers/active', {
    method: 'PUT',
    headers: { ...bearer(t.token), 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const chat = () => send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody('Hi') });
const expectError = (reply: Reply, status: number, code: string, message?: RegExp) => {
  expect(reply.status).toBe(status);
  expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(reply.json.error).toEqual({ code, message: expect.any(String), request_id: reply.headers['x-request-id'] });
  if (message) expect(reply.json.error.message).toMatch(message);
};
const chatCalls = (s: { requests: { method: string }[] }) => s.requests.filter((r) => r.method === 'POST').length;

describe('GET /v1/providers', () => {
  it('lists every provider in the configured order, the active one and whether a phone may switch; never a key or apiKeyEnv', async () => {
    const reply = await get('/v1/providers');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      active: 'local',
      model: 'auto',
      canSwitch: false,
      transcription: false,
      providers: [
        { id: 'local', kind: 'ollama', label: `Ollama at ${ollama.url}`, model: 'auto', selectable: true },
        { id: 'lmstudio', kind: 'openai-compatible', label: `OpenAI-compatible server at ${lmstudio.url}`, model: 'auto', selectable: true },
        { id: 'claude', kind: 'anthropic', label: `Anthropic at ${anthropic.url}`, model: 'claude-sonnet-4-5', selectable: true },
        { id: 'gemini', kind: 'gemini', label: `Gemini at ${gemini.url}`, model: 'gemini-2.5-flash', selectable: true },
        { id: 'down', kind: 'ollama', label: `Ollama at http://127.0.0.1:${deadPort}`, model: 'qwen3', selectable: true },
        { id: 'deskrelay-cloud', kind: 'cloud', label: 'DeskRelay cloud', model: 'auto', selectable: false },
      ],
    });
    expect(reply.body).not.toMatch(/apiKeyEnv|ANTHROPIC_API_KEY|LMSTUDIO_KEY|SECRET/);
    writeConfig({ allowPhoneProviderSwitch: true });
    expect((await get('/v1/providers')).json.canSwitch).toBe(true);
  });

  it('is behind the token, and GET only', async () => {
    expectError(await get('/v1/providers', null), 401, 'auth.missing_token');
    expectError(await get('/v1/providers', 'dr_wrong'), 401, 'auth.invalid_token');
    const post = await send(t.url, '/v1/providers', { method: 'POST', headers: bearer(t.token), body: '{}' });
    expectError(post, 405, 'route.method_not_allowed');
    expect(post.headers.allow).toBe('GET');
  });
});

describe('GET /v1/providers/<id>/models', () => {
  it('lists each kind\'s models as the provider lists them', async () => {
    expect((await get('/v1/providers/local/models')).json).toEqual({ models: [{ id: 'qwen3:latest' }, { id: 'llama3.2:latest' }] });
    expect((await get('/v1/providers/lmstudio/models')).json).toEqual({ models: [{ id: 'qwen2.5-7b-instruct' }, { id: 'text-embedding-nomic-embed-text-v1.5' }] });
    expect((await get('/v1/providers/claude/models')).json).toEqual({ models: ANTHROPIC_DEFAULT_MODELS.map((id) => ({ id })) });
    expect(anthropic.requests.at(-1)!.headers['x-api-key']).toBe(KEY);
    // Gemini's embedding model cannot chat: left out.
    expect((await get('/v1/providers/gemini/models')).json).toEqual({ models: GEMINI_DEFAULT_MODELS.map((id) => ({ id })) });
    expect((await get('/v1/providers/deskrelay-cloud/models')).json).toEqual({ models: [] });
  });

  it('a provider that cannot be reached is 502 provider.unreachable, worded as the stream\'s error', async () => {
    const reply = await get('/v1/providers/down/models');
    expectError(reply, 502, 'provider.unreachable', new RegExp(`^Ollama at http://127\\.0\\.0\\.1:${deadPort} is not reachable`));
    writeConfig({ activeProvider: 'down' });
    const streamed = parseEvents((await chat()).body).at(-1);
    expect(streamed).toEqual({ type: 'error', message: reply.json.error.message });
  });

  it('unknown id is 404 provider.not_found; behind the token', async () => {
    expectError(await get('/v1/providers/nope/models'), 404, 'provider.not_found', /No provider "nope"/);
    expectError(await get('/v1/providers/local/models', null), 401, 'auth.missing_token');
    expectError(await get('/v1/providers/local/other'), 404, 'route.not_found');
  });
});

describe('PUT /v1/providers/active', () => {
  it('403 provider.switch_disabled while the desktop does not allow it (the default), file untouched', async () => {
    const before = readFileSync(file, 'utf8');
    expectError(await put({ id: 'lmstudio' }), 403, 'provider.switch_disabled', /allowPhoneProviderSwitch/);
    writeConfig({ allowPhoneProviderSwitch: false });
    expectError(await put({ id: 'lmstudio' }), 403, 'provider.switch_disabled');
    writeConfig();
    expect(readFileSync(file, 'utf8')).toBe(before);
  });

  it('refuses a bad body, an unknown id and the cloud provider', async () => {
    writeConfig({ allowPhoneProviderSwitch: true });
    expectError(await put('{'), 400, 'request.invalid_json');
    expectError(await put([]), 400, 'request.invalid_body');
    expectError(await put({}), 400, 'request.invalid_body', /^id must be/);
    expectError(await put({ id: 7 }), 400, 'request.invalid_body', /^id must be/);
    expectError(await put({ id: 'local', model: '' }), 400, 'request.invalid_body', /^model must be/);
    expectError(await put({ id: 'claude', model: 'auto' }), 400, 'request.invalid_body', /"auto" works only for ollama and openai-compatible/);
    expectError(await put({ id: 'nope' }), 404, 'provider.not_found');
    expectError(await put({ id: 'deskrelay-cloud' }), 400, 'provider.not_selectable');
    expectError(await put({ id: 'lmstudio' }, { 'Content-Type': 'text/plain' }), 415, 'request.unsupported_media_type');
    expectError(await send(t.url, '/v1/providers/active', { method: 'PUT', body: '{"id":"lmstudio"}' }), 401, 'auth.missing_token');
    expect(JSON.parse(readFileSync(file, 'utf8')).activeProvider).toBe('local');
  });

  it('a model must be one the provider lists (or auto), at most 256 characters: config.json never gets anything else', async () => {
    writeConfig({ allowPhoneProviderSwitch: true });
    const before = readFileSync(file, 'utf8');
    // The review stored a 900 KB model name.
    expectError(await put({ id: 'lmstudio', model: 'x'.repeat(900_000) }), 400, 'request.invalid_body', /^model must be at most 256 characters/);
    expectError(await put({ id: 'lmstudio', model: 'x'.repeat(257) }), 400, 'request.invalid_body', /^model must be at most 256 characters/);
    const listed = lmstudio.requests.filter((r) => r.path === '/v1/models').length;
    expectError(await put({ id: 'lmstudio', model: 'gpt-9-ultra' }), 400, 'request.invalid_body', /"gpt-9-ultra" is not a model .*offers; it lists: qwen2\.5-7b-instruct, text-embedding-nomic-embed-text-v1\.5/);
    // Asked of the provider itself, as GET /v1/providers/<id>/models does.
    expect(lmstudio.requests.filter((r) => r.path === '/v1/models').length).toBe(listed + 1);
    expectError(await put({ id: 'claude', model: 'claude-imaginary' }), 400, 'request.invalid_body', /is not a model/);
    // A provider that cannot be asked: no switch, the stream's wording.
    expectError(await put({ id: 'down', model: 'qwen3-other' }), 502, 'provider.unreachable');
    expect(readFileSync(file, 'utf8')).toBe(before);
    // A listed one, and auto, are taken.
    expect((await put({ id: 'lmstudio', model: 'text-embedding-nomic-embed-text-v1.5' })).status).toBe(200);
    expect((await put({ id: 'local', model: 'auto' })).status).toBe(200);
    expect(JSON.parse(readFileSync(file, 'utf8')).providers[1].model).toBe('text-embedding-nomic-embed-text-v1.5');
  });

  it('switches for the next message: the answer, config.json, /v1/remote/info and the stand-in that answers all show it', async () => {
    writeConfig({ allowPhoneProviderSwitch: true, activeProvider: 'deskrelay-cloud' });
    expect((await get('/v1/remote/info')).json.providerConfigured).toBe(false);
    expectError(await chat(), 412, 'chat.no_provider');

    const reply = await put({ id: 'local' });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual((await get('/v1/providers')).json);
    expect(reply.json).toMatchObject({ active: 'local', model: 'auto', canSwitch: true });
    expect((await get('/v1/remote/info')).json.providerConfigured).toBe(true);
    let calls = chatCalls(ollama);
    expect(parseEvents((await chat()).body).at(-1)).toEqual({ type: 'done', content: OLLAMA_DEFAULT_REPLY.join('') });
    expect(chatCalls(ollama)).toBe(calls + 1);

    // With a model: the provider's model is written too, and the next request asks for it.
    const withModel = await put({ id: 'lmstudio', model: 'qwen2.5-7b-instruct' });
    expect(withModel.json).toMatchObject({ active: 'lmstudio', model: 'qwen2.5-7b-instruct' });
    calls = chatCalls(ollama);
    expect(parseEvents((await chat()).body).at(-1)).toEqual({ type: 'done', content: OPENAI_DEFAULT_REPLY.join('') });
    expect(chatCalls(ollama)).toBe(calls);
    expect(lmstudio.requests.at(-1)!.body.model).toBe('qwen2.5-7b-instruct');

    // The file: the switch and nothing else changed; indentation, unknown fields and mode kept.
    const written = JSON.parse(readFileSync(file, 'utf8'));
    expect(written.activeProvider).toBe('lmstudio');
    expect(written.providers[1]).toEqual({ id: 'lmstudio', kind: 'openai-compatible', baseUrl: lmstudio.url, model: 'qwen2.5-7b-instruct', apiKeyEnv: 'LMSTUDIO_KEY' });
    expect(written.$comment).toBe('my relay');
    expect(written.workspaces).toBe(3);
    expect(written.allowPhoneProviderSwitch).toBe(true);
    expect(readFileSync(file, 'utf8')).toMatch(/^\{\n {4}"\$comment"/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a stream in flight keeps the provider it started with', async () => {
    writeConfig({ allowPhoneProviderSwitch: true });
    ollama.set({ chunkDelayMs: 150 });
    const ollamaCalls = chatCalls(ollama);
    const lmCalls = chatCalls(lmstudio);
    const inFlight = chat();
    await expect.poll(() => chatCalls(ollama)).toBe(ollamaCalls + 1);
    expect((await put({ id: 'lmstudio' })).status).toBe(200);
    const next = await chat();
    expect(parseEvents(next.body).at(-1)).toEqual({ type: 'done', content: OPENAI_DEFAULT_REPLY.join('') });
    expect(parseEvents((await inFlight).body).at(-1)).toEqual({ type: 'done', content: OLLAMA_DEFAULT_REPLY.join('') });
    expect(chatCalls(ollama)).toBe(ollamaCalls + 1);
    expect(chatCalls(lmstudio)).toBe(lmCalls + 1);
  });

  it('a host that cannot switch (no switchTo) answers 403', async () => {
    const other = await startRelay();
    try {
      const reply = await send(other.url, '/v1/providers/active', {
        method: 'PUT',
        headers: { ...bearer(other.token), 'Content-Type': 'application/json' },
        body: '{"id":"local"}',
      });
      expectError(reply, 403, 'provider.switch_disabled');
      // Its list is the active provider alone.
      expect((await send(other.url, '/v1/providers', { headers: bearer(other.token) })).json).toMatchObject({ active: 'local', canSwitch: false, providers: [{ id: 'local' }] });
    } finally {
      await other.close();
    }
  });
});

describe('the OpenAI door', () => {
  it('/v1/models lists the providers\' models, the active one first, the cloud provider left out', async () => {
    const reply = await send(t.url, '/v1/models', { headers: bearer(t.token) });
    expect(reply.status).toBe(200);
    const pairs = reply.json.data.map((m: { id: string; owned_by: string }) => `${m.owned_by}/${m.id}`);
    expect(pairs.slice(0, 2)).toEqual(['local/qwen3:latest', 'local/llama3.2:latest']);
    expect(pairs).toContain('lmstudio/qwen2.5-7b-instruct');
    expect(pairs).toContain('claude/claude-sonnet-4-5');
    expect(pairs).toContain(`gemini/${GEMINI_DEFAULT_MODELS[0]}`);
    // Unreachable: its configured model only.
    expect(pairs).toContain('down/qwen3');
    expect(pairs.some((p: string) => p.startsWith('deskrelay-cloud/'))).toBe(false);
  });
});
