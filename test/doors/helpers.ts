/** Shared bits of the doors' suites: a relay in front of the stand-in Ollama, resumable requests and id-numbered SSE parsing. */
import type { OutgoingHttpHeaders } from 'node:http';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { refusalOf } from '../../server/src/doors/errors';
import type { HttpError } from '../../server/src/http/errors';
import type { ChatMessage, ToolOptions } from '../../server/src/providers/types';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { chatBody, chatHeaders, send, type Reply } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';

/** Makes the stand-in Ollama the relay's active provider. */
export function useOllama(relay: TestRelay, ollama: OllamaStandIn, model = 'llama3.2'): void {
  relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model });
}

export interface OllamaRelay {
  t: TestRelay;
  ollama: OllamaStandIn;
}

/**
 * For one suite: the stand-in Ollama and a relay (`startRelay(options)`) with it active, handed to
 * `started` before the tests and closed after them. After each test the suite's own `reset` runs,
 * the stand-in is back to normal, Ollama is active again and no stream is left on the relay.
 */
export function relayWithOllama(
  options: Parameters<typeof startRelay>[0],
  started: (s: OllamaRelay) => void,
  each: { model?: string; reset?: () => void } = {},
): void {
  let ollama: OllamaStandIn | undefined;
  let t: TestRelay | undefined;
  beforeAll(async () => {
    ollama = await startOllamaStandIn();
    t = await startRelay(options);
    useOllama(t, ollama, each.model);
    started({ t, ollama });
  });
  afterAll(async () => {
    await t?.close();
    await ollama?.close();
  });
  afterEach(async () => {
    each.reset?.();
    ollama!.set({ mode: 'normal' });
    useOllama(t!, ollama!, each.model);
    await expect.poll(() => t!.relay.activeStreams).toBe(0);
  });
}

/**
 * A relay of its own with one stream slot, the stand-in Ollama active and answering `reply` a word
 * every `chunkDelayMs`, for `use`; closed after it.
 */
export async function withOneSlot(ollama: OllamaStandIn, reply: string[], chunkDelayMs: number, use: (one: TestRelay) => Promise<void>): Promise<void> {
  const one = await startRelay({ maxConcurrentStreams: () => 1 });
  try {
    useOllama(one, ollama);
    ollama.set({ mode: 'normal', reply, chunkDelayMs });
    await use(one);
  } finally {
    await one.close();
  }
}

export function resumeHeaders(token: string, key: string, lastEventId?: number | string): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = { ...chatHeaders(token), 'Idempotency-Key': key };
  if (lastEventId !== undefined) headers['Last-Event-ID'] = String(lastEventId);
  return headers;
}

export interface NumberedEvent {
  id: number | undefined;
  event: any;
}

/** SSE blocks with their `id:` (if any) and parsed `data:`; comments (keep-alives) are skipped. */
export function parseNumbered(body: string): NumberedEvent[] {
  return body
    .split('\n\n')
    .filter((block) => block.split('\n').some((l) => l.startsWith('data:')))
    .map((block) => {
      const lines = block.split('\n');
      const idLine = lines.find((l) => l.startsWith('id:'));
      const data = lines.find((l) => l.startsWith('data:'))!;
      return { id: idLine === undefined ? undefined : Number(idLine.slice(3).trim()), event: JSON.parse(data.slice(5).trim()) };
    });
}

/** POST /v1/chat/stream with an Idempotency-Key, optionally leaving once `leaveAfter` events arrived. */
export function resumable(
  url: string,
  token: string,
  key: string,
  opts: { lastEventId?: number | string; body?: string; leaveAfter?: number } = {},
): Promise<Reply> {
  return send(url, '/v1/chat/stream', {
    method: 'POST',
    headers: resumeHeaders(token, key, opts.lastEventId),
    body: opts.body ?? chatBody(),
    abortWhen: opts.leaveAfter === undefined ? undefined : (so) => parseNumbered(completeBlocks(so)).length >= opts.leaveAfter!,
  });
}

/** The body up to its last complete SSE block. */
export function completeBlocks(body: string): string {
  const end = body.lastIndexOf('\n\n');
  return end < 0 ? '' : body.slice(0, end + 2);
}

let counter = 0;
export const newKey = () => `key-${process.pid}-${Date.now().toString(36)}-${counter++}`;

/** The refusal a door answers for a `body` its request parser refuses, its own or the chat core's (fails the test when it accepts the body). */
export function refusal(parse: (body: unknown) => unknown, body: unknown): HttpError {
  try {
    parse(body);
  } catch (err) {
    const refused = refusalOf(err);
    if (refused) return refused;
    throw err;
  }
  throw new Error('accepted');
}

/**
 * One tool round as a door's client sends it, the same in every dialect but the assistant's call
 * and the tool's result: a question, a call of `weather` for Oslo, its result "Rain".
 */
export function weatherRound(call: object, result: object): { messages: object[]; tools: object[] } {
  return {
    messages: [{ role: 'user', content: 'Weather?' }, { role: 'assistant', ...call }, { role: 'tool', content: 'Rain', ...result }],
    tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
  };
}

/** A parsed weatherRound: the tool offered, the call with `id` and its arguments as an object, the result as `result` says. */
export function expectWeatherRound(parsed: { messages: ChatMessage[]; tools?: ToolOptions }, id: string, result: Partial<ChatMessage>): void {
  expect(parsed.tools?.tools?.map((t) => t.name)).toEqual(['weather']);
  expect(parsed.messages[1]!.toolCalls).toEqual([{ id, name: 'weather', arguments: { city: 'Oslo' } }]);
  expect(parsed.messages[2]).toMatchObject({ role: 'tool', content: 'Rain', ...result });
}
