/** The OpenAI-compatible door, driven by the real `openai` SDK (issue 6, part 3). */
import OpenAI, { APIError, AuthenticationError, BadRequestError, RateLimitError } from 'openai';
import { describe, expect, it } from 'vitest';
import { OLLAMA_DEFAULT_REPLY, OLLAMA_DEFAULT_THINKING, OLLAMA_MID_STREAM_ERROR, type OllamaStandIn } from '../../fixtures/providers/ollama';
import { OPENAI_DEFAULT_REASONING, OPENAI_DEFAULT_REPLY, startOpenAiStandIn } from '../../fixtures/providers/openai';
import { bearer, send } from '../../helpers/http';
import type { TestRelay } from '../../helpers/relay';
import { relayWithOllama, withOneSlot } from '../helpers';

let t: TestRelay;
let ollama: OllamaStandIn;
relayWithOllama({ keepAliveMs: 100, providerIdleMs: 3_000 }, (s) => ({ t, ollama } = s));

const client = (relay: TestRelay = t, apiKey = relay.token, maxRetries = 0) => new OpenAI({ baseURL: `${relay.url}/v1`, apiKey, maxRetries });
const chatCalls = () => ollama.requests.filter((r) => r.path === '/api/chat').length;
const hello = [{ role: 'user' as const, content: 'Hello' }];

async function collect(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const delta = (field: 'content' | 'reasoning_content') => chunks.map((c) => (c.choices[0]?.delta as Record<string, unknown>)?.[field] ?? '').join('');
  return { chunks, content: delta('content'), reasoning: delta('reasoning_content') };
}

describe('chat completions', () => {
  it('answers a non-stream request, with the desktop\'s model whatever the client asked for', async () => {
    const completion = await client().chat.completions.create({ model: 'gpt-4o', messages: hello });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.model).toBe('llama3.2');
    expect(completion.choices[0].message).toEqual({ role: 'assistant', content: OLLAMA_DEFAULT_REPLY.join('') });
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(ollama.requests.at(-1)!.body.model).toBe('llama3.2');
  });

  it('streams OpenAI chunks, ending with finish_reason and [DONE]', async () => {
    const { chunks, content } = await collect(await client().chat.completions.create({ model: 'x', messages: hello, stream: true }));
    expect(content).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    // The role chunk comes once, first, as OpenAI sends it.
    expect(chunks.filter((c) => c.choices[0].delta.role !== undefined)).toHaveLength(1);
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
    expect(chunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null)).toBe(true);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'llama3.2' && typeof c.created === 'number')).toBe(true);

    const raw = await send(t.url, '/v1/chat/completions', {
      method: 'POST',
      headers: { ...bearer(t.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: hello, stream: true }),
    });
    expect(raw.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(raw.body.endsWith('"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')).toBe(true);
  });

  it('sends reasoning as reasoning_content, never as <think> tags', async () => {
    ollama.set({ mode: 'thinking' });
    const streamed = await collect(await client().chat.completions.create({ model: 'x', messages: hello, stream: true }));
    expect(streamed.reasoning).toBe(OLLAMA_DEFAULT_THINKING.join(''));
    expect(streamed.content).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    const whole = await client().chat.completions.create({ model: 'x', messages: hello });
    expect(whole.choices[0].message).toEqual({
      role: 'assistant',
      content: OLLAMA_DEFAULT_REPLY.join(''),
      reasoning_content: OLLAMA_DEFAULT_THINKING.join(''),
    });
  });

  it('relays an OpenAI-compatible provider\'s reasoning too', async () => {
    const oa = await startOpenAiStandIn({ mode: 'thinking' });
    try {
      t.useProvider({ id: 'lmstudio', kind: 'openai-compatible', baseUrl: oa.url, model: 'qwen3' });
      const { reasoning, content } = await collect(await client().chat.completions.create({ model: 'x', messages: hello, stream: true }));
      expect(reasoning).toBe(OPENAI_DEFAULT_REASONING.join(''));
      expect(content).toBe(OPENAI_DEFAULT_REPLY.join(''));
    } finally {
      await oa.close();
    }
  });

  it('maps text-part arrays and the developer role; refuses the deprecated function role with 400', async () => {
    await client().chat.completions.create({
      model: 'x',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hel' }, { type: 'text', text: 'lo' }] },
      ],
    });
    expect(ollama.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello' },
    ]);
    const before = chatCalls();
    const refused = client()
      .chat.completions.create({ model: 'x', messages: [...hello, { role: 'function', name: 'f', content: 'x' }] })
      .catch((e: unknown) => e);
    const err = (await refused) as BadRequestError;
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.type).toBe('invalid_request_error');
    expect(err.message).toContain('messages[1].role "function"');
    expect(chatCalls()).toBe(before);
  });
});

describe('failures', () => {
  it('a mid-stream provider error makes the SDK raise, not end as if complete', async () => {
    ollama.set({ mode: 'mid-stream-error' });
    const stream = await client().chat.completions.create({ model: 'x', messages: hello, stream: true });
    const err = await collect(stream).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).message).toContain(OLLAMA_MID_STREAM_ERROR);
  });

  it('a non-stream provider failure is 502 and the SDK does not retry it', async () => {
    ollama.set({ mode: 'mid-stream-error' });
    const before = chatCalls();
    const err = (await client(t, t.token, 2).chat.completions.create({ model: 'x', messages: hello }).catch((e: unknown) => e)) as APIError;
    expect(err).toBeInstanceOf(APIError);
    expect(err.status).toBe(502);
    expect(err.type).toBe('server_error');
    expect(err.message).toContain(OLLAMA_MID_STREAM_ERROR);
    expect(chatCalls()).toBe(before + 1);
  });

  it('a bad or missing key raises AuthenticationError with OpenAI\'s error shape', async () => {
    const before = ollama.requests.length;
    const err = (await client(t, 'dr_wrong').chat.completions.create({ model: 'x', messages: hello }).catch((e: unknown) => e)) as AuthenticationError;
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err.code).toBe('invalid_api_key');
    expect(err.type).toBe('invalid_request_error');
    const missing = await send(t.url, '/v1/models');
    expect(missing.status).toBe(401);
    expect(missing.json).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    expect(ollama.requests.length).toBe(before);
  });

  it('no usable provider is 412 model_not_found, and /v1/models lists nothing', async () => {
    t.setActive({ ok: false, reason: 'cloud', id: 'deskrelay-cloud' });
    const err = (await client().chat.completions.create({ model: 'x', messages: hello }).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(412);
    expect(err.code).toBe('model_not_found');
    expect(err.message).toContain('Switch to a local provider');
    expect((await client().models.list()).data).toEqual([]);
  });

  it('too many streams raises RateLimitError', async () => {
    await withOneSlot(ollama, Array.from({ length: 10 }, (_, i) => `r${i} `), 50, async (one) => {
      const first = client(one).chat.completions.create({ model: 'x', messages: hello });
      await expect.poll(() => one.relay.activeStreams).toBe(1);
      const err = await client(one).chat.completions.create({ model: 'x', messages: hello }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RateLimitError);
      expect((err as RateLimitError).code).toBe('rate_limit_exceeded');
      await first;
    });
  });

  it('a client that leaves a stream aborts the provider request', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 50 }, (_, i) => `a${i} `), chunkDelayMs: 100 });
    await send(t.url, '/v1/chat/completions', {
      method: 'POST',
      headers: { ...bearer(t.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: hello, stream: true }),
      abortWhen: (body) => body.includes('"content":"a0 "'),
    });
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
  });
});

describe('models', () => {
  it('lists the active provider\'s models as it lists them, its configured model first (issue 13)', async () => {
    const list = await client().models.list();
    expect(list.data).toEqual(
      ['llama3.2', 'qwen3:latest', 'llama3.2:latest'].map((id) => ({ id, object: 'model', created: 0, owned_by: 'local' })),
    );
    // A provider that does not answer shows its configured model only, and nothing for `auto`.
    t.useProvider({ id: 'lmstudio', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:1/v1', model: 'auto' });
    expect((await client().models.list()).data).toEqual([]);
    t.useProvider({ id: 'lmstudio', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:1/v1', model: 'qwen3' });
    expect((await client().models.list()).data).toEqual([{ id: 'qwen3', object: 'model', created: 0, owned_by: 'lmstudio' }]);
  });

  it('a reply names the model that really answered, not "auto" (streamed and not)', async () => {
    t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'auto' });
    const whole = await client().chat.completions.create({ model: 'x', messages: hello });
    expect(whole.model).toBe('qwen3:latest');
    const { chunks } = await collect(await client().chat.completions.create({ model: 'x', messages: hello, stream: true }));
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.every((c) => c.model === 'qwen3:latest')).toBe(true);
    expect(ollama.requests.at(-1)!.body.model).toBe('qwen3:latest');
  });
});
