/**
 * Every provider kind through the real relay over HTTP: what a phone sees for the happy path,
 * thinking, each failure form and a disconnect. (The adapter tests beside this file check each
 * adapter's wire details directly; this suite checks what reaches the client.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../server/src/providers/types';
import { ANTHROPIC_DEFAULT_REPLY, ANTHROPIC_DEFAULT_THINKING, startAnthropicStandIn } from '../fixtures/providers/anthropic';
import { GEMINI_DEFAULT_REPLY, GEMINI_DEFAULT_THINKING, startGeminiStandIn } from '../fixtures/providers/gemini';
import { OLLAMA_DEFAULT_REPLY, OLLAMA_DEFAULT_THINKING, startOllamaStandIn } from '../fixtures/providers/ollama';
import { OPENAI_DEFAULT_REASONING, OPENAI_DEFAULT_REPLY, startOpenAiStandIn } from '../fixtures/providers/openai';
import { SPLIT_UTF8_REPLY, type StandIn } from '../fixtures/providers/standin';
import { chatBody, chatHeaders, parseEvents, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';

const KEY = 'sk-test-SECRET-0123456789abcdef';

interface Kind {
  kind: ProviderConfig['kind'];
  label: string;
  start(): Promise<StandIn & { set(o: Record<string, unknown>): void }>;
  config(url: string): ProviderConfig;
  reply: string[];
  thinking: string[];
  /** The request headers that carry the key, as the provider expects them. */
  keyHeaders(headers: Record<string, unknown>): void;
  statuses: number[];
}

const kinds: Kind[] = [
  {
    kind: 'ollama',
    label: 'Ollama at',
    start: () => startOllamaStandIn() as never,
    config: (url) => ({ id: 'p', kind: 'ollama', baseUrl: url, model: 'qwen3' }),
    reply: OLLAMA_DEFAULT_REPLY,
    thinking: OLLAMA_DEFAULT_THINKING,
    keyHeaders: (h) => expect(h.authorization).toBeUndefined(),
    statuses: [404, 500],
  },
  {
    kind: 'openai-compatible',
    label: 'OpenAI-compatible server at',
    start: () => startOpenAiStandIn() as never,
    config: (url) => ({ id: 'p', kind: 'openai-compatible', baseUrl: url, model: 'gpt-test', apiKeyEnv: 'OPENAI_API_KEY' }),
    reply: OPENAI_DEFAULT_REPLY,
    thinking: OPENAI_DEFAULT_REASONING,
    keyHeaders: (h) => expect(h.authorization).toBe(`Bearer ${KEY}`),
    statuses: [401, 403, 404, 429, 500, 503],
  },
  {
    kind: 'anthropic',
    label: 'Anthropic at',
    start: () => startAnthropicStandIn() as never,
    config: (url) => ({ id: 'p', kind: 'anthropic', baseUrl: url, model: 'claude-test', apiKeyEnv: 'ANTHROPIC_API_KEY' }),
    reply: ANTHROPIC_DEFAULT_REPLY,
    thinking: ANTHROPIC_DEFAULT_THINKING,
    keyHeaders: (h) => {
      expect(h['x-api-key']).toBe(KEY);
      expect(h['anthropic-version']).toBe('2023-06-01');
    },
    statuses: [401, 403, 404, 429, 500, 529],
  },
  {
    kind: 'gemini',
    label: 'Gemini at',
    start: () => startGeminiStandIn() as never,
    config: (url) => ({ id: 'p', kind: 'gemini', baseUrl: url, model: 'gemini-test', apiKeyEnv: 'GEMINI_API_KEY' }),
    reply: GEMINI_DEFAULT_REPLY,
    thinking: GEMINI_DEFAULT_THINKING,
    keyHeaders: (h) => expect(h['x-goog-api-key']).toBe(KEY),
    statuses: [400, 403, 404, 429, 500, 503],
  },
];

describe.each(kinds)('$kind through the relay', (k) => {
  let standIn: Awaited<ReturnType<Kind['start']>>;
  let t: TestRelay;
  let key: string | undefined = KEY;

  beforeAll(async () => {
    standIn = await k.start();
    t = await startRelay({ providerIdleMs: 800, keys: { get: async () => key, howToSet: () => 'run "DeskRelay: Set Provider API Key"' } });
    t.useProvider(k.config(standIn.url));
  });
  afterAll(async () => {
    await t.close();
    await standIn.close();
  });

  const chat = async () => {
    const reply = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody('Hi') });
    expect(reply.status).toBe(200);
    expect(reply.body).not.toContain(KEY);
    const events = parseEvents(reply.body);
    // The terminal rule: tokens, then exactly one done or error, last.
    expect(events.slice(0, -1).every((e) => e.type === 'token' && e.delta !== '')).toBe(true);
    expect(['done', 'error']).toContain(events.at(-1).type);
    return events;
  };
  const expectFailure = async (pattern?: RegExp) => {
    const events = await chat();
    const last = events.at(-1);
    expect(last.type).toBe('error');
    expect(last.message).toContain(`${k.label} ${standIn.url.replace(/\/+$/, '')}`);
    if (pattern) expect(last.message).toMatch(pattern);
    await expect.poll(() => t.relay.activeStreams).toBe(0);
    return last.message as string;
  };

  it('streams the reply, done.content equal to the deltas, with the key in the provider\'s own header', async () => {
    standIn.set({ mode: 'normal' });
    const events = await chat();
    expect(events.at(-1)).toEqual({ type: 'done', content: k.reply.join('') });
    expect(events.filter((e) => e.type === 'token').map((e) => e.delta).join('')).toBe(k.reply.join(''));
    k.keyHeaders(standIn.requests.at(-1)!.headers as Record<string, unknown>);
  });

  it('wraps the provider\'s reasoning in <think>…</think> ahead of the answer', async () => {
    standIn.set({ mode: 'thinking' });
    const events = await chat();
    expect(events.at(-1)).toEqual({ type: 'done', content: `<think>${k.thinking.join('')}</think>${k.reply.join('')}` });
  });

  it('carries multi-byte characters split across network chunks whole', async () => {
    standIn.set({ mode: 'split-utf8' });
    const events = await chat();
    expect(events.at(-1)).toEqual({ type: 'done', content: SPLIT_UTF8_REPLY.join('') });
  });

  it.each(['mid-stream-error', 'no-end', 'invalid-json', 'hang-after-headers', 'hang'])('turns %s into one error event naming the provider', async (mode) => {
    standIn.set({ mode });
    await expectFailure();
  });

  it('turns each HTTP error status into one error event with the provider\'s own message, never the key', async () => {
    for (const status of k.statuses) {
      standIn.set({ mode: 'http-error', status });
      // Ollama's 404 is a missing model: the message names it and says how to pull it.
      const message = await expectFailure(k.kind === 'ollama' && status === 404 ? /model "qwen3" not found.*ollama pull qwen3/ : new RegExp(String(status)));
      if (status === 401 || status === 403) expect(message).toMatch(/key|access/i);
    }
  });

  it('says how to set a key that is needed and missing', async () => {
    if (k.kind === 'ollama') return;
    key = undefined;
    try {
      if (k.kind === 'openai-compatible') {
        // Local servers (LM Studio, llama.cpp) need no key: the request goes without one, and a
        // server that does need one answers 401, which the message turns into how to set it.
        standIn.set({ mode: 'normal' });
        expect((await chat()).at(-1).type).toBe('done');
        expect(standIn.requests.at(-1)!.headers.authorization).toBeUndefined();
        standIn.set({ mode: 'http-error', status: 401 });
        expect(await expectFailure(/Set Provider API Key/)).toMatch(/API key/);
        return;
      }
      standIn.set({ mode: 'normal' });
      const before = standIn.requests.length;
      const message = await expectFailure(/Set Provider API Key/);
      expect(message).toMatch(/needs an API key/);
      // Nothing was sent to a provider that would only refuse it.
      expect(standIn.requests.length).toBe(before);
    } finally {
      key = KEY;
    }
  });

  it('cancels the provider request within a second when the phone disconnects', async () => {
    standIn.set({ mode: 'normal', chunkDelayMs: 200, reply: Array.from({ length: 30 }, (_, i) => `w${i} `) });
    await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody(), abortWhen: (b) => b.includes('"type":"token"') });
    const left = Date.now();
    await standIn.lastRequestClosed;
    expect(Date.now() - left).toBeLessThan(1_000);
    expect(standIn.lastRequestAborted).toBe(true);
    await expect.poll(() => t.relay.activeStreams).toBe(0);
  });
});
