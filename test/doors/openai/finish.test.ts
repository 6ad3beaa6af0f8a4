/**
 * Issue 10: how a reply ended is data. Each provider kind's way of saying "cut at the token
 * limit" reaches an OpenAI SDK as `finish_reason: "length"` (streamed and not), and a normal
 * end as `"stop"`; SPEC's own stream is unchanged by it (no extra fields).
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicStandIn } from '../../fixtures/providers/anthropic';
import { startGeminiStandIn } from '../../fixtures/providers/gemini';
import { startOllamaStandIn } from '../../fixtures/providers/ollama';
import { startOpenAiStandIn } from '../../fixtures/providers/openai';
import type { StandIn } from '../../fixtures/providers/standin';
import { bearer, send } from '../../helpers/http';
import { startRelay, type TestRelay } from '../../helpers/relay';
import type { ProviderConfig } from '../../../server/src/providers/types';

interface Kind {
  name: string;
  start(): Promise<StandIn & { set(o: { mode?: string }): void }>;
  config(url: string): ProviderConfig;
}

/** The provider's own words for a length cut-off are in each stand-in (cited there). */
const KINDS: Kind[] = [
  { name: 'ollama (done_reason "length")', start: () => startOllamaStandIn() as never, config: (url) => ({ id: 'p', kind: 'ollama', baseUrl: url, model: 'llama3.2' }) },
  {
    name: 'openai-compatible (finish_reason "length")',
    start: () => startOpenAiStandIn() as never,
    config: (url) => ({ id: 'p', kind: 'openai-compatible', baseUrl: url, model: 'm' }),
  },
  {
    name: 'anthropic (stop_reason "max_tokens")',
    start: () => startAnthropicStandIn() as never,
    config: (url) => ({ id: 'p', kind: 'anthropic', baseUrl: url, model: 'claude-sonnet-4-5' }),
  },
  { name: 'gemini (finishReason "MAX_TOKENS")', start: () => startGeminiStandIn() as never, config: (url) => ({ id: 'p', kind: 'gemini', baseUrl: url, model: 'gemini-2.5-flash' }) },
];

let t: TestRelay;
beforeAll(async () => {
  t = await startRelay({ keys: { get: async () => 'sk-test-key-0123456789', howToSet: () => 'set the key' } });
});
afterAll(async () => {
  await t.close();
});

const client = () => new OpenAI({ baseURL: `${t.url}/v1`, apiKey: t.token, maxRetries: 0 });
const hello = [{ role: 'user' as const, content: 'Hello' }];

describe.each(KINDS)('finish reasons through the OpenAI door: $name', (kind) => {
  let provider: Awaited<ReturnType<Kind['start']>>;
  beforeAll(async () => {
    provider = await kind.start();
    t.useProvider(kind.config(provider.url));
  });
  afterAll(async () => {
    await provider.close();
  });

  it('a reply cut at the token limit is finish_reason "length", streamed and not', async () => {
    t.useProvider(kind.config(provider.url));
    provider.set({ mode: 'length' });
    const whole = await client().chat.completions.create({ model: 'x', messages: hello });
    expect(whole.choices[0].finish_reason).toBe('length');
    expect(whole.choices[0].message.content).not.toBe('');
    const finishes: (string | null)[] = [];
    for await (const chunk of await client().chat.completions.create({ model: 'x', messages: hello, stream: true })) {
      finishes.push(chunk.choices[0]?.finish_reason ?? null);
    }
    expect(finishes.at(-1)).toBe('length');
    expect(finishes.slice(0, -1).every((f) => f === null)).toBe(true);
  });

  it('a normal end is finish_reason "stop"', async () => {
    t.useProvider(kind.config(provider.url));
    provider.set({ mode: 'normal' });
    const whole = await client().chat.completions.create({ model: 'x', messages: hello });
    expect(whole.choices[0].finish_reason).toBe('stop');
  });

  it('SPEC\'s stream still ends with a plain done event', async () => {
    t.useProvider(kind.config(provider.url));
    provider.set({ mode: 'length' });
    const reply = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: { ...bearer(t.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ messages: hello }) });
    const last = reply.body.trimEnd().split('\n\n').at(-1)!;
    expect(Object.keys(JSON.parse(last.slice('data: '.length)))).toEqual(['type', 'content']);
    expect(last).toMatch(/^data: \{"type":"done","content":/);
  });
});
