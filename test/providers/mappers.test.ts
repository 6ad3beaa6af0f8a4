/**
 * Each kind's mapper alone, fed a reply its stand-in wrote (recorded once, byte for byte, from
 * the stand-in's own HTTP answer to the request the kind's dialect builds): no relay transport,
 * no call. What the HTTP tests cannot reach: the same bytes read with a cut at every byte
 * boundary (inside a line's JSON, a UTF-8 character, an SSE `data:` field or its blank line) give
 * the same parts, and a tool call whose arguments arrive across many lines comes out whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicDialect } from '../../server/src/providers/anthropic';
import type { Dialect, Part } from '../../server/src/providers/dialect';
import { NdjsonFramer, SseFramer } from '../../server/src/providers/framing';
import { geminiDialect } from '../../server/src/providers/gemini';
import { ollamaDialect } from '../../server/src/providers/ollama';
import { openAiCompatibleDialect } from '../../server/src/providers/openai-compatible';
import type { ProviderConfig, ToolCall } from '../../server/src/providers/types';
import { startAnthropicStandIn } from '../fixtures/providers/anthropic';
import { startGeminiStandIn } from '../fixtures/providers/gemini';
import { startOllamaStandIn } from '../fixtures/providers/ollama';
import { startOpenAiStandIn } from '../fixtures/providers/openai';
import type { StandIn, StandInCall } from '../fixtures/providers/standin';
import { FAKE_KEY } from './helpers';

type AnyStandIn = StandIn & { set(o: Record<string, unknown>): void };

/** Text with characters of two, three and four UTF-8 bytes, so that some cuts fall inside one. */
const REPLY = ['Grüße, ', 'ich schaue nach 🌦️ ', '(日本語).'];
const PARIS: StandInCall = { id: 'call_paris', name: 'get_weather', arguments: '{"city":"Paris","units":"celsius","days":[1,2,3],"note":"naïve café"}' };
const OSLO: StandInCall = { id: 'call_oslo', name: 'get_time', arguments: '{"zone":"Europe/Oslo"}' };

interface Kind {
  name: string;
  start(): Promise<AnyStandIn>;
  dialect(url: string): Dialect;
  /** How the reply of calls ends in this kind's words. */
  finish: string;
  /** Whether the kind keeps the stand-in's call ids (Ollama and Gemini send none: ids are made up). */
  ids: boolean;
}

const config = (kind: ProviderConfig['kind'], url: string, model: string): ProviderConfig => ({ id: 'p', kind, baseUrl: url, model });

const kinds: Kind[] = [
  { name: 'ollama', start: () => startOllamaStandIn() as never, dialect: (url) => ollamaDialect(config('ollama', url, 'qwen3')), finish: 'stop', ids: false },
  { name: 'openai-compatible', start: () => startOpenAiStandIn() as never, dialect: (url) => openAiCompatibleDialect(config('openai-compatible', url, 'gpt-test')), finish: 'tool_calls', ids: true },
  { name: 'anthropic', start: () => startAnthropicStandIn() as never, dialect: (url) => anthropicDialect(config('anthropic', url, 'claude-test')), finish: 'tool_calls', ids: true },
  { name: 'gemini', start: () => startGeminiStandIn() as never, dialect: (url) => geminiDialect(config('gemini', url, 'gemini-test')), finish: 'stop', ids: false },
];

/** The parts a dialect's mapper makes of a body that arrives in these reads, up to its finish. */
function partsOf(dialect: Dialect, reads: Buffer[]): Part[] {
  const mapper = dialect.mapper();
  const parts: Part[] = [];
  const map = (data: string, type: string | undefined) => {
    mapper.map(data, type, parts);
    return parts.at(-1)?.kind === 'finish';
  };
  const framer = dialect.framing === 'ndjson' ? new NdjsonFramer({ line: (text) => map(text, undefined) }) : new SseFramer({ event: (type, data) => map(data, type) });
  for (const read of reads) if (framer.chunk(read)) return parts;
  framer.end();
  return parts;
}

const tools = { tools: [PARIS, OSLO].map((c) => ({ name: c.name, parameters: { type: 'object' } })) };

describe.each(kinds)('the $name mapper', (kind) => {
  let standIn: AnyStandIn;
  let dialect: Dialect;
  let body: Buffer;

  beforeAll(async () => {
    standIn = await kind.start();
    dialect = kind.dialect(standIn.url);
    // Arguments split into 16-character fragments (several lines each) where the kind streams them (OpenAI, Anthropic).
    standIn.set({ mode: 'tool-calls', reply: REPLY, calls: [PARIS, OSLO], fragmentSize: 16 });
    const r = dialect.request({ messages: [{ role: 'user', content: 'Weather in Paris, time in Oslo?' }], tools, key: FAKE_KEY, model: 'test-model' });
    const res = await fetch(r.url, { method: 'POST', headers: { ...r.headers, 'content-type': 'application/json' }, body: JSON.stringify(r.body) });
    expect(res.status).toBe(200);
    body = Buffer.from(await res.arrayBuffer());
  });
  afterAll(() => standIn.close());

  it('maps the recorded reply to its text, each call whole with its arguments parsed, and the finish last', () => {
    const parts = partsOf(dialect, [body]);
    const text = parts.flatMap((p) => (p.kind === 'text' ? [p.text] : [])).join('');
    const calls = parts.flatMap((p) => (p.kind === 'tool' ? [p.call] : []));
    expect(text).toBe(REPLY.join(''));
    expect(calls.map(({ name, arguments: args }) => ({ name, arguments: args }))).toEqual([PARIS, OSLO].map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })));
    if (kind.ids) expect(calls.map((c: ToolCall) => c.id)).toEqual([PARIS.id, OSLO.id]);
    else expect(new Set(calls.map((c) => c.id)).size).toBe(2);
    expect(parts.at(-1)).toEqual({ kind: 'finish', reason: kind.finish });
    expect(parts.filter((p) => p.kind === 'finish')).toHaveLength(1);
  });

  it('gives the same parts whatever byte boundary a read ends at', () => {
    const whole = partsOf(dialect, [body]);
    // Made-up ids are random per reply: compare everything else.
    const shape = (parts: Part[]) => parts.map((p) => (p.kind === 'tool' && !kind.ids ? { ...p, call: { ...p.call, id: '' } } : p));
    for (let cut = 1; cut < body.length; cut++) {
      const split = partsOf(dialect, [body.subarray(0, cut), body.subarray(cut)]);
      if (JSON.stringify(shape(split)) !== JSON.stringify(shape(whole))) expect(shape(split), `cut at byte ${cut} of ${body.length}`).toEqual(shape(whole));
    }
    // And one byte per read.
    expect(shape(partsOf(dialect, [...body].map((b) => Buffer.from([b]))))).toEqual(shape(whole));
  });
});
