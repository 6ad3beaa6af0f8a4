/**
 * How a reply ended is data (issue 10): run() resolves with each provider kind's end, read from
 * its own wire format, for a normal stop and for a cut at the token limit.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { clearModelCache, createAdapter } from '../../server/src/providers';
import type { ProviderConfig } from '../../server/src/providers/types';
import { ANTHROPIC_DEFAULT_REPLY, startAnthropicStandIn } from '../fixtures/providers/anthropic';
import { GEMINI_DEFAULT_REPLY, startGeminiStandIn } from '../fixtures/providers/gemini';
import { OLLAMA_DEFAULT_REPLY, startOllamaStandIn } from '../fixtures/providers/ollama';
import { OPENAI_DEFAULT_REPLY, startOpenAiStandIn } from '../fixtures/providers/openai';
import type { StandIn } from '../fixtures/providers/standin';
import { deps, FAKE_KEY, run } from './helpers';

interface Kind {
  kind: string;
  start(): Promise<StandIn & { set(o: Record<string, unknown>): void }>;
  config(url: string): ProviderConfig;
  reply: string[];
}

const kinds: Kind[] = [
  { kind: 'ollama', start: () => startOllamaStandIn() as never, config: (url) => ({ id: 'p', kind: 'ollama', baseUrl: url, model: 'qwen3' }), reply: OLLAMA_DEFAULT_REPLY },
  {
    kind: 'openai-compatible',
    start: () => startOpenAiStandIn() as never,
    config: (url) => ({ id: 'p', kind: 'openai-compatible', baseUrl: url, model: 'gpt-test' }),
    reply: OPENAI_DEFAULT_REPLY,
  },
  { kind: 'anthropic', start: () => startAnthropicStandIn() as never, config: (url) => ({ id: 'p', kind: 'anthropic', baseUrl: url, model: 'claude-test' }), reply: ANTHROPIC_DEFAULT_REPLY },
  { kind: 'gemini', start: () => startGeminiStandIn() as never, config: (url) => ({ id: 'p', kind: 'gemini', baseUrl: url, model: 'gemini-test' }), reply: GEMINI_DEFAULT_REPLY },
];

let standIn: (StandIn & { set(o: Record<string, unknown>): void }) | undefined;
afterEach(async () => {
  await standIn?.close();
  standIn = undefined;
});

describe.each(kinds)('$kind finish reasons', (k) => {
  it('a normal end resolves `stop`', async () => {
    clearModelCache();
    standIn = await k.start();
    const out = await run(createAdapter(k.config(standIn.url), deps({ key: FAKE_KEY })));
    expect(out.error).toBeUndefined();
    expect(out.finish).toBe('stop');
    expect(out.text).toBe(k.reply.join(''));
  });

  it('a cut at the token limit resolves `length`, after the whole text', async () => {
    clearModelCache();
    standIn = await k.start();
    standIn.set({ mode: 'length' });
    const out = await run(createAdapter(k.config(standIn.url), deps({ key: FAKE_KEY })));
    expect(out.error).toBeUndefined();
    expect(out.finish).toBe('length');
    expect(out.text).toBe(k.reply.join(''));
  });
});

describe('provider-specific finish reasons', () => {
  it('anthropic `refusal` resolves `content_filter`', async () => {
    const a = await startAnthropicStandIn({ mode: 'refusal' });
    standIn = a as never;
    const out = await run(createAdapter({ id: 'p', kind: 'anthropic', baseUrl: a.url, model: 'claude-test' }, deps({ key: FAKE_KEY })));
    expect(out.error).toBeUndefined();
    expect(out.finish).toBe('content_filter');
  });

  it('openai-compatible `[DONE]` without a finish_reason resolves `stop`', async () => {
    const oa = await startOpenAiStandIn();
    standIn = oa as never;
    const out = await run(createAdapter({ id: 'p', kind: 'openai-compatible', baseUrl: oa.url, model: 'm' }, deps()));
    expect(out.finish).toBe('stop');
  });
});

describe('push delivery', () => {
  it('flushes once per provider read, and a slow consumer paces the provider', async () => {
    const ollama = await startOllamaStandIn({ chunkDelayMs: 30 });
    standIn = ollama as never;
    let flushes = 0;
    let waiting = 0;
    const pieces: string[] = [];
    /** Pieces handed over before each flush: what one provider read held. */
    const perFlush: number[] = [];
    let since = 0;
    const finish = await createAdapter({ id: 'p', kind: 'ollama', baseUrl: ollama.url, model: 'm' }, deps({ idleTimeoutMs: 200 })).run(
      [{ role: 'user', content: 'hi' }],
      new AbortController().signal,
      {
        piece: (_kind, text) => {
          pieces.push(text);
          since++;
        },
        flush: () => {
          flushes++;
          perFlush.push(since);
          since = 0;
          // A consumer slower than the idle limit: the wait must not count as provider silence.
          if (flushes === 2) {
            waiting++;
            return new Promise((r) => setTimeout(r, 400));
          }
        },
      },
    );
    expect(finish).toBe('stop');
    expect(pieces.join('')).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(waiting).toBe(1);
    // Lines 30 ms apart are separate reads: each is flushed on its own, none held back for the next.
    expect(perFlush.slice(0, 2)).toEqual([1, 1]);
    // What arrived while the consumer made the provider wait comes through after it, in full.
    expect(perFlush.reduce((a, b) => a + b, 0)).toBe(OLLAMA_DEFAULT_REPLY.length);
  });

  it('a burst of lines in one read is one flush, not one per line (one client write per read)', async () => {
    const reply = Array.from({ length: 300 }, (_, i) => `w${i} `);
    const ollama = await startOllamaStandIn({ reply });
    standIn = ollama as never;
    let flushes = 0;
    const pieces: string[] = [];
    const finish = await createAdapter({ id: 'p', kind: 'ollama', baseUrl: ollama.url, model: 'm' }, deps({ idleTimeoutMs: 2_000 })).run(
      [{ role: 'user', content: 'hi' }],
      new AbortController().signal,
      { piece: (_kind, text) => void pieces.push(text), flush: () => void flushes++ },
    );
    expect(finish).toBe('stop');
    expect(pieces.join('')).toBe(reply.join(''));
    // The stand-in writes each line as its own HTTP chunk without waiting: they arrive in a few
    // socket reads, and each read is flushed once.
    expect(flushes).toBeLessThan(reply.length / 4);
  });
});
