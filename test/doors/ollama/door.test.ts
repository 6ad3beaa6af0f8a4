/**
 * The Ollama-compatible door (issue 14), driven by the real `ollama` npm client (ollama-js) with
 * the pairing token in its `headers` option, in front of the stand-in Ollama and OpenAI-compatible
 * providers: the same door answers for any backend.
 */
import { Ollama, type ChatResponse, type GenerateResponse } from 'ollama';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OLLAMA_DEFAULT_REPLY, OLLAMA_DEFAULT_THINKING, OLLAMA_MID_STREAM_ERROR, type OllamaStandIn } from '../../fixtures/providers/ollama';
import { OPENAI_DEFAULT_REASONING, OPENAI_DEFAULT_REPLY, startOpenAiStandIn, type OpenAiStandIn } from '../../fixtures/providers/openai';
import { startStandIn } from '../../fixtures/providers/standin';
import { bearer, send } from '../../helpers/http';
import type { TestRelay } from '../../helpers/relay';
import { relayWithOllama, useOllama, withOneSlot } from '../helpers';

let t: TestRelay;
let ollama: OllamaStandIn;
let lmstudio: OpenAiStandIn;
const KEY = 'sk-door-secret-0123456789abcdef';

beforeAll(async () => {
  lmstudio = await startOpenAiStandIn();
});
afterAll(async () => {
  await lmstudio.close();
});
relayWithOllama({ keepAliveMs: 100, providerIdleMs: 3_000, keys: { get: async () => KEY, howToSet: () => 'set the key' } }, (s) => ({ t, ollama } = s), {
  reset: () => lmstudio.set({ mode: 'normal' }),
});
function useLmStudio(relay: TestRelay) {
  relay.useProvider({ id: 'lmstudio', kind: 'openai-compatible', baseUrl: lmstudio.url, model: 'qwen2.5-7b-instruct' });
}
const client = (relay: TestRelay = t, token = relay.token, host = relay.url) => new Ollama({ host, headers: { Authorization: `Bearer ${token}` } });
const chatCalls = () => ollama.requests.filter((r) => r.path === '/api/chat').length;
const hello = [{ role: 'user', content: 'Hello' }];
const GO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;

async function collect<T extends ChatResponse | GenerateResponse>(stream: AsyncIterable<T>) {
  const parts: T[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}
const content = (parts: ChatResponse[]) => parts.map((p) => p.message.content).join('');
const thinking = (parts: ChatResponse[]) => parts.map((p) => p.message.thinking ?? '').join('');

/** The raw NDJSON lines of a request, as a phone app receives them. */
async function rawLines(path: string, body: object, relay: TestRelay = t) {
  const reply = await send(relay.url, path, {
    method: 'POST',
    headers: { ...bearer(relay.token), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { reply, lines: reply.body.split('\n') };
}

describe('GET /api/version and /api/tags', () => {
  it('answers the relay version', async () => {
    expect(await client().version()).toEqual({ version: '9.8.7' });
  });

  it("lists an Ollama provider's models, the model in use first, with honest placeholders", async () => {
    useOllama(t, ollama, 'llama3.2:latest');
    const { models } = await client().list();
    expect(models.map((m) => m.name)).toEqual(['llama3.2:latest', 'qwen3:latest']);
    expect(models[0]).toEqual({
      name: 'llama3.2:latest',
      model: 'llama3.2:latest',
      modified_at: expect.stringMatching(GO_TIME),
      size: 0,
      digest: '',
      details: { parent_model: '', format: '', family: '', families: [], parameter_size: '', quantization_level: '' },
    });
    // With `auto` the runner's own order stands: its first model is the one that answers.
    useOllama(t, ollama, 'auto');
    expect((await client().list()).models.map((m) => m.name)).toEqual(['qwen3:latest', 'llama3.2:latest']);
  });

  it("lists an OpenAI-compatible server's models, with its key", async () => {
    useLmStudio(t);
    const { models } = await client().list();
    expect(models.map((m) => m.name)).toEqual(['qwen2.5-7b-instruct', 'text-embedding-nomic-embed-text-v1.5']);
    const asked = lmstudio.requests.at(-1)!;
    expect(asked.path).toBe('/v1/models');
    expect(asked.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("lists Anthropic's and Gemini's models with their keys; Gemini's that cannot chat are left out", async () => {
    // Their list documents as the APIs answer them (Anthropic "List Models", Gemini "models.list").
    const hosted = await startStandIn((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      const body =
        path === '/v1/models'
          ? { data: [{ type: 'model', id: 'claude-sonnet-4-5' }, { type: 'model', id: 'claude-haiku-4-5' }], has_more: false }
          : path === '/v1beta/models'
            ? {
                models: [
                  { name: 'models/gemini-2.5-flash', supportedGenerationMethods: ['generateContent', 'countTokens'] },
                  { name: 'models/text-embedding-004', supportedGenerationMethods: ['embedContent'] },
                ],
              }
            : undefined;
      res.writeHead(body ? 200 : 401, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body ?? { error: { message: `invalid x-api-key ${KEY}` } }));
    });
    try {
      t.useProvider({ id: 'claude', kind: 'anthropic', baseUrl: hosted.url, model: 'claude-haiku-4-5' });
      expect((await client().list()).models.map((m) => m.name)).toEqual(['claude-haiku-4-5', 'claude-sonnet-4-5']);
      expect(hosted.requests.at(-1)!.path).toBe('/v1/models?limit=1000');
      expect(hosted.requests.at(-1)!.headers).toMatchObject({ 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });

      t.useProvider({ id: 'gemini', kind: 'gemini', baseUrl: hosted.url, model: 'gemini-2.5-flash' });
      expect((await client().list()).models.map((m) => m.name)).toEqual(['gemini-2.5-flash']);
      expect(hosted.requests.at(-1)!.path).toBe('/v1beta/models?pageSize=1000');
      expect(hosted.requests.at(-1)!.headers['x-goog-api-key']).toBe(KEY);

      // A refused key: the chat wording, with the key taken out.
      t.useProvider({ id: 'claude', kind: 'anthropic', baseUrl: `${hosted.url}/refuses`, model: 'claude-haiku-4-5' });
      const refused = (await client().list().catch((e: unknown) => e)) as Error & { status_code?: number };
      expect(refused.status_code).toBe(502);
      expect(refused.message).toContain('rejected the API key (HTTP 401');
      expect(refused.message).not.toContain(KEY.slice(0, 12));
    } finally {
      await hosted.close();
    }
  });

  it('an unreachable provider is a 502 worded as the chat stream words it', async () => {
    t.useProvider({ id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:1', model: 'auto' });
    const listed = (await client().list().catch((e: unknown) => e)) as Error & { status_code?: number };
    expect(listed.status_code).toBe(502);
    expect(listed.message).toMatch(/^Ollama at http:\/\/127\.0\.0\.1:1 is not reachable \(ECONNREFUSED\)/);
    const chatted = (await collect(await client().chat({ model: 'x', messages: hello, stream: true })).catch((e: unknown) => e)) as Error;
    expect(chatted.message).toBe(listed.message);
  });
});

describe('POST /api/chat', () => {
  it('streams NDJSON lines as Ollama writes them, ending with done, done_reason and the timings', async () => {
    const parts = await collect(await client().chat({ model: 'gpt-4o', messages: hello, stream: true }));
    expect(content(parts)).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(parts.slice(0, -1).every((p) => p.done === false && p.model === 'llama3.2' && p.message.role === 'assistant')).toBe(true);
    const last = parts.at(-1)!;
    expect(last).toMatchObject({ model: 'llama3.2', message: { role: 'assistant', content: '' }, done: true, done_reason: 'stop', eval_count: OLLAMA_DEFAULT_REPLY.length });
    expect(last.total_duration).toBeGreaterThan(0);
    // The model the client named is not used: the desktop's provider and model answer.
    expect(ollama.requests.at(-1)!.body.model).toBe('llama3.2');

    // `stream` defaults to true; the bytes: one compact Go-style object per line, keys in Go's order.
    ollama.set({ mode: 'normal', reply: ['<b>', ' & ', 'x'] });
    const { reply, lines } = await rawLines('/api/chat', { model: 'x', messages: hello });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/x-ndjson');
    expect(lines.at(-1)).toBe('');
    expect(lines[0]).toMatch(/^\{"model":"llama3\.2","created_at":"[^"]+","message":\{"role":"assistant","content":"\\u003cb\\u003e"\},"done":false\}$/);
    expect(lines[1]).toContain('"content":" \\u0026 "');
    const done = JSON.parse(lines.at(-2)!);
    expect(Object.keys(done)).toEqual(['model', 'created_at', 'message', 'done', 'done_reason', 'total_duration', 'prompt_eval_duration', 'eval_count', 'eval_duration']);
    expect(done.created_at).toMatch(GO_TIME);
    expect(lines.slice(0, -1).map((l) => JSON.parse(l).message.content).join('')).toBe('<b> & x');
  });

  it('answers one JSON object with "stream":false', async () => {
    const whole = await client().chat({ model: 'x', messages: hello, stream: false });
    expect(whole).toMatchObject({ model: 'llama3.2', message: { role: 'assistant', content: OLLAMA_DEFAULT_REPLY.join('') }, done: true, done_reason: 'stop' });
    expect(whole.message.thinking).toBeUndefined();
    expect(whole.created_at).toMatch(GO_TIME);
  });

  it('puts reasoning in message.thinking, streamed and whole', async () => {
    ollama.set({ mode: 'thinking' });
    const parts = await collect(await client().chat({ model: 'x', messages: hello, stream: true, think: true }));
    expect(thinking(parts)).toBe(OLLAMA_DEFAULT_THINKING.join(''));
    expect(content(parts)).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(parts.every((p) => !p.message.thinking || p.message.content === '')).toBe(true);
    const whole = await client().chat({ model: 'x', messages: hello, stream: false });
    expect(whole.message).toEqual({ role: 'assistant', content: OLLAMA_DEFAULT_REPLY.join(''), thinking: OLLAMA_DEFAULT_THINKING.join('') });
  });

  it("relays an OpenAI-compatible server's reply and reasoning the same way", async () => {
    useLmStudio(t);
    lmstudio.set({ mode: 'thinking' });
    const parts = await collect(await client().chat({ model: 'llama3.2', messages: hello, stream: true }));
    expect(thinking(parts)).toBe(OPENAI_DEFAULT_REASONING.join(''));
    expect(content(parts)).toBe(OPENAI_DEFAULT_REPLY.join(''));
    expect(parts.at(-1)).toMatchObject({ model: 'qwen2.5-7b-instruct', done: true, done_reason: 'stop' });
    expect(lmstudio.requests.at(-1)!.body.model).toBe('qwen2.5-7b-instruct');
  });

  it("done_reason is the provider's finish reason: a token-limit cut is length", async () => {
    ollama.set({ mode: 'length' });
    const parts = await collect(await client().chat({ model: 'x', messages: hello, stream: true }));
    expect(parts.at(-1)).toMatchObject({ done: true, done_reason: 'length' });
    useLmStudio(t);
    lmstudio.set({ mode: 'length' });
    expect(await client().chat({ model: 'x', messages: hello, stream: false })).toMatchObject({ done: true, done_reason: 'length' });
  });

  it('maps roles and drops thinking and options without failing the request', async () => {
    await client().chat({
      model: 'x',
      messages: [
        { role: 'System', content: 'Be brief.' },
        { role: 'user', content: 'What is this?' },
        { role: 'assistant', content: 'A greeting.', thinking: 'It says hello.' },
        { role: 'user', content: 'Thanks' },
      ],
      options: { temperature: 0.1, num_ctx: 4096 },
      think: true,
      keep_alive: '5m',
      stream: false,
    });
    expect(ollama.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is this?' },
      { role: 'assistant', content: 'A greeting.' },
      { role: 'user', content: 'Thanks' },
    ]);
  });

  it("passes a message's images (bare base64, typed from their bytes) to the provider in its own form", async () => {
    // A 1x1 PNG and the first bytes of a JPEG: Ollama apps send no media type.
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]).toString('base64');
    await client().chat({ model: 'x', messages: [{ role: 'user', content: 'What is this?', images: [png, jpeg] }], stream: false });
    expect(ollama.requests.at(-1)!.images).toEqual([
      { message: 0, data: png },
      { message: 0, data: jpeg },
    ]);
    // Behind an OpenAI-compatible server the same photos go as image_url data URLs.
    useLmStudio(t);
    await client().generate({ model: 'x', prompt: 'Describe it', images: [png], stream: false });
    expect(lmstudio.requests.at(-1)!.images).toEqual([{ message: 0, mediaType: 'image/png', data: png }]);
  });

  it('refuses an image it cannot recognise, and images on a non-user turn, naming the field', async () => {
    const notAnImage = Buffer.from('hello, not an image').toString('base64');
    const reply = await send(t.url, '/api/chat', {
      method: 'POST',
      headers: { ...bearer(t.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi', images: [notAnImage] }] }),
    });
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: 'messages[0].images[0] is not a JPEG, PNG, WebP or GIF image.' });
    const onAssistant = await send(t.url, '/api/chat', {
      method: 'POST',
      headers: { ...bearer(t.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'assistant', content: 'hi', images: [notAnImage] }] }),
    });
    expect(onAssistant.status).toBe(400);
    expect(onAssistant.json.error).toMatch(/messages\[0\]\.images: only user messages may carry images/);
  });

  it('answers an empty chat the way Ollama does when it only loads the model, without asking the provider', async () => {
    const before = chatCalls();
    const loaded = await client().chat({ model: 'x', messages: [] });
    expect(loaded).toMatchObject({ model: 'llama3.2', message: { role: 'assistant', content: '' }, done: true, done_reason: 'load' });
    expect(await client().chat({ model: 'x', messages: [], keep_alive: 0 })).toMatchObject({ done: true, done_reason: 'unload' });
    expect(chatCalls()).toBe(before);
  });
});

describe('POST /api/generate and /api/show', () => {
  it('generates from a prompt (and system), streamed and whole, in `response`', async () => {
    const parts = await collect(await client().generate({ model: 'x', prompt: 'Hello', system: 'Be brief.', stream: true }));
    expect(parts.map((p) => p.response).join('')).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(parts.at(-1)).toMatchObject({ model: 'llama3.2', response: '', done: true, done_reason: 'stop' });
    expect(ollama.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello' },
    ]);
    ollama.set({ mode: 'thinking' });
    const whole = await client().generate({ model: 'x', prompt: 'Hello', stream: false });
    expect(whole).toMatchObject({ response: OLLAMA_DEFAULT_REPLY.join(''), thinking: OLLAMA_DEFAULT_THINKING.join(''), done: true });
    const before = chatCalls();
    expect(await client().generate({ model: 'x', prompt: '' })).toMatchObject({ response: '', done: true, done_reason: 'load' });
    expect(chatCalls()).toBe(before);
  });

  it('shows enough for apps that ask before chatting', async () => {
    const shown = await client().show({ model: 'anything' });
    expect(shown).toEqual({
      details: { parent_model: '', format: '', family: '', families: [], parameter_size: '', quantization_level: '' },
      model_info: {},
      capabilities: ['completion', 'tools'],
      modified_at: expect.stringMatching(GO_TIME),
    });
  });
});

describe('failures', () => {
  it('a mid-stream provider error is a last {"error"} line, and the client raises', async () => {
    ollama.set({ mode: 'mid-stream-error' });
    const err = await collect(await client().chat({ model: 'x', messages: hello, stream: true })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(OLLAMA_MID_STREAM_ERROR);
    const { lines } = await rawLines('/api/chat', { messages: hello });
    expect(JSON.parse(lines[0]!).message.content).toBe(OLLAMA_DEFAULT_REPLY[0]);
    expect(lines.slice(1)).toEqual([`{"error":${JSON.stringify(`Ollama at ${ollama.url} reported an error: ${OLLAMA_MID_STREAM_ERROR}`)}}`, '']);
    // Not streamed: Ollama's error body with a gateway status.
    const whole = (await client().chat({ model: 'x', messages: hello, stream: false }).catch((e: unknown) => e)) as Error & { status_code?: number };
    expect(whole.status_code).toBe(502);
    expect(whole.message).toContain(OLLAMA_MID_STREAM_ERROR);
  });

  it('a provider that ends without its done line is an error, never a silent end', async () => {
    useLmStudio(t);
    lmstudio.set({ mode: 'no-end' });
    const err = (await collect(await client().generate({ model: 'x', prompt: 'Hi', stream: true })).catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('ended the reply without finishing it');
  });

  it('no key reaches a response, even when the provider echoes it', async () => {
    useLmStudio(t);
    lmstudio.set({ mode: 'http-error', status: 401 });
    const { reply } = await rawLines('/api/chat', { messages: hello });
    expect(reply.body).toContain('rejected the API key');
    expect(reply.body).not.toContain(KEY.slice(0, 12));
  });

  it('a missing or wrong token is 401 in Ollama\'s error shape, and the provider is not asked', async () => {
    const before = ollama.requests.length;
    const wrong = (await client(t, 'dr_wrong').list().catch((e: unknown) => e)) as Error & { status_code?: number };
    expect(wrong.status_code).toBe(401);
    expect(wrong.message).toContain('The token does not match');
    const err = (await client(t, 'dr_wrong').chat({ model: 'x', messages: hello, stream: true }).catch((e: unknown) => e)) as Error & { status_code?: number };
    expect(err.status_code).toBe(401);
    for (const path of ['/api/version', '/api/tags', '/ollama/api/tags', '/ollama']) {
      const missing = await send(t.url, path);
      expect(missing.status, path).toBe(401);
      expect(missing.json, path).toEqual({ error: 'Send the pairing token as "Authorization: Bearer <token>".' });
      expect(missing.headers['www-authenticate']).toBe('Bearer realm="deskrelay"');
    }
    expect(ollama.requests.length).toBe(before);
  });

  it('a bad body is 400 in Ollama\'s error shape', async () => {
    for (const [body, message] of [
      ['{"messages":', 'The request body is not valid JSON.'],
      ['{"messages":[{"role":"user","content":"hi"}],"stream":"yes"}', 'stream must be a boolean.'],
      ['{"messages":[{"role":"function","content":"42"}]}', 'messages[0].role must be one of system, user, assistant, tool.'],
      ['{"messages":[{"role":"user","content":"hi"}],"tools":{}}', 'tools must be an array of {"type":"function","function":{name, description, parameters}} objects.'],
      ['{"messages":[{"role":"user","content":7}]}', 'messages[0].content must be a string.'],
    ] as const) {
      const reply = await send(t.url, '/api/chat', { method: 'POST', headers: { ...bearer(t.token), 'Content-Type': 'application/json' }, body });
      expect(reply.status, body).toBe(400);
      expect(reply.json, body).toEqual({ error: message });
      expect(reply.headers['x-request-id']).toMatch(/.+/);
    }
  });

  it('no usable provider is 412 with the switch hint', async () => {
    t.setActive({ ok: false, reason: 'cloud', id: 'deskrelay-cloud' });
    for (const call of [() => client().chat({ model: 'x', messages: hello }), () => client().list(), () => client().show({ model: 'x' })]) {
      const err = (await call().catch((e: unknown) => e)) as Error & { status_code?: number };
      expect(err.status_code).toBe(412);
      expect(err.message).toContain('Switch to a local provider');
    }
  });

  it('the stream limit is shared with the other doors: past it, 429', async () => {
    await withOneSlot(ollama, Array.from({ length: 10 }, (_, i) => `r${i} `), 50, async (one) => {
      // The slot is taken through the OpenAI door…
      const first = send(one.url, '/v1/chat/completions', {
        method: 'POST',
        headers: { ...bearer(one.token), 'Content-Type': 'application/json' },
        body: JSON.stringify({ messages: hello, stream: true }),
      });
      await expect.poll(() => one.relay.activeStreams).toBe(1);
      // …so the Ollama door has none left.
      const err = (await client(one).chat({ model: 'x', messages: hello, stream: true }).catch((e: unknown) => e)) as Error & { status_code?: number };
      expect(err.status_code).toBe(429);
      expect(err.message).toContain('already serving 1 chat streams');
      expect((await first).status).toBe(200);
    });
  });

  it("the client's abort cancels the provider request", async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 50 }, (_, i) => `a${i} `), chunkDelayMs: 100 });
    const ai = client();
    const stream = await ai.chat({ model: 'x', messages: hello, stream: true });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const part of stream) {
        seen.push(part.message.content);
        if (seen.length === 2) stream.abort();
      }
    })().catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
    expect(seen.length).toBeLessThan(50);
    await expect.poll(() => t.relay.activeStreams).toBe(0);
  });
});

describe('under /ollama', () => {
  it("answers Ollama's root check and serves the same API, for apps that check GET <url>", async () => {
    const root = await send(t.url, '/ollama', { headers: bearer(t.token) });
    expect(root.status).toBe(200);
    expect(root.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(root.body).toBe('Ollama is running');
    const prefixed = client(t, t.token, `${t.url}/ollama`);
    expect((await prefixed.list()).models.map((m) => m.name)).toEqual(['llama3.2', 'qwen3:latest', 'llama3.2:latest']);
    expect(content(await collect(await prefixed.chat({ model: 'x', messages: hello, stream: true })))).toBe(OLLAMA_DEFAULT_REPLY.join(''));
  });
});
