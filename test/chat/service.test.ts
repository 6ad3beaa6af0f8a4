/**
 * The chat service on its own, against a stand-in Ollama over real HTTP: the terminal rule, the
 * slot freed on every path, refusals before anything is written, abort, and the reply cap.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelReason } from '../../server/src/chat/events';
import { ChatService, type Ending, type ReplySink } from '../../server/src/chat/service';
import { SpecReply } from '../../server/src/chat/specReply';
import type { TerminalEvent } from '../../server/src/chat/events';
import { ChatError } from '../../server/src/chat/errors';
import type { ActiveProvider, PieceKind, ProviderConfig } from '../../server/src/providers/types';
import { OLLAMA_DEFAULT_REPLY, OLLAMA_DEFAULT_THINKING, startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';

let ollama: OllamaStandIn;
beforeAll(async () => {
  ollama = await startOllamaStandIn();
});
afterAll(async () => {
  await ollama.close();
});

const USER = [{ role: 'user' as const, content: 'Hi' }];

function service(over: { active?: () => ActiveProvider; limit?: number; maxReplyChars?: number; errors?: string[] } = {}) {
  const provider: ProviderConfig = { id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' };
  return {
    provider,
    chat: new ChatService({
      providers: { active: over.active ?? (() => ({ ok: true, config: provider })) },
      keys: { get: async () => undefined, howToSet: () => 'set it' },
      providerIdleMs: 3_000,
      maxConcurrentStreams: () => over.limit ?? 8,
      maxReplyChars: over.maxReplyChars,
      logger: { info() {}, warn() {}, error: (m) => over.errors?.push(m) },
    }),
  };
}

/** Records everything a door would see, and checks the sink contract as it goes. */
function recorder() {
  const pieces: { kind: PieceKind; text: string }[] = [];
  const ends: Ending[] = [];
  let flushes = 0;
  const sink: ReplySink = {
    piece(kind, text) {
      if (ends.length > 0) throw new Error('a piece after the end');
      expect(text).not.toBe('');
      pieces.push({ kind, text });
    },
    flush() {
      flushes++;
    },
    end(ending) {
      ends.push(ending);
    },
  };
  return { sink, pieces, ends, flushes: () => flushes };
}

/** SPEC events, as the SSE and WebSocket doors get them. */
function specRecorder() {
  const tokens: string[] = [];
  const terminals: TerminalEvent[] = [];
  const reply = new SpecReply({ token: (d) => void tokens.push(d), flush: () => undefined, terminal: (e) => void terminals.push(e) });
  return { reply, tokens, terminals };
}

describe('the chat service', () => {
  it('streams the pieces in order, then exactly one end with the finish reason, and frees the slot', async () => {
    ollama.set({ mode: 'normal' });
    const { chat, provider } = service();
    const r = recorder();
    const handle = chat.start(provider, USER, r.sink);
    expect(chat.active).toBe(1);
    const ending = await handle.done;
    expect(ending).toEqual({ ok: true, finish: 'stop' });
    expect(r.ends).toEqual([ending]);
    expect(r.pieces.map((p) => p.text).join('')).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(r.flushes()).toBeGreaterThan(0);
    expect(chat.active).toBe(0);
  });

  it('as SPEC events: reasoning in one <think> segment, done.content equal to the deltas sent', async () => {
    ollama.set({ mode: 'thinking' });
    const { chat, provider } = service();
    const s = specRecorder();
    await chat.start(provider, USER, s.reply).done;
    expect(s.tokens.every((t) => t !== '')).toBe(true);
    expect(s.terminals).toEqual([{ type: 'done', content: s.tokens.join('') }]);
    expect(s.tokens.join('')).toBe(`<think>${OLLAMA_DEFAULT_THINKING.join('')}</think>${OLLAMA_DEFAULT_REPLY.join('')}`);
  });

  it('a provider failure is the one end, worded for the client, and the slot is freed', async () => {
    ollama.set({ mode: 'mid-stream-error' });
    const { chat, provider } = service();
    const s = specRecorder();
    const ending = await chat.start(provider, USER, s.reply).done;
    expect(ending.ok).toBe(false);
    expect(s.terminals).toHaveLength(1);
    expect(s.terminals[0]).toMatchObject({ type: 'error', message: expect.stringContaining(`Ollama at ${ollama.url}`) });
    expect(chat.active).toBe(0);
  });

  it('an unreachable provider ends the same way, without a piece', async () => {
    const { chat } = service();
    const r = recorder();
    const ending = await chat.start({ id: 'gone', kind: 'ollama', baseUrl: 'http://127.0.0.1:9', model: 'm' }, USER, r.sink).done;
    expect(ending).toEqual({ ok: false, message: expect.stringContaining('is not reachable') });
    expect(r.pieces).toEqual([]);
    expect(r.ends).toHaveLength(1);
    expect(chat.active).toBe(0);
  });

  it('abort ends the reply at once with the reason given, aborts the provider request and frees the slot', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 200 }, (_, i) => `w${i} `), chunkDelayMs: 20 });
    const { chat, provider } = service();
    const r = recorder();
    const handle = chat.start(provider, USER, r.sink);
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => r.pieces.length >= 3 && (clearInterval(timer), resolve()), 5);
    });
    handle.abort(new CancelReason('Stopped for the test.'));
    const ending = await handle.done;
    expect(ending).toEqual({ ok: false, message: 'Stopped for the test.' });
    expect(r.ends).toEqual([ending]);
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
    expect(r.pieces.length).toBeLessThan(200);
    expect(chat.active).toBe(0);
  });

  it('a sink that throws ends the reply as our own failure, logged without details, slot freed', async () => {
    ollama.set({ mode: 'normal' });
    const errors: string[] = [];
    const { chat, provider } = service({ errors });
    const ends: Ending[] = [];
    const ending = await chat.start(provider, USER, {
      piece() {
        throw new Error('door bug at /secret/path.ts');
      },
      flush() {},
      end: (e) => void ends.push(e),
    }).done;
    expect(ending).toEqual({ ok: false, message: expect.stringContaining('DeskRelay log') });
    expect(ending.ok || ending.message).not.toContain('/secret/path.ts');
    expect(ends).toEqual([ending]);
    expect(errors.some((m) => m.includes('failed unexpectedly'))).toBe(true);
    expect(chat.active).toBe(0);
  });

  it('refuses (chat.too_many_streams, retry after 1 s: a 429 at the doors) before anything is written when every slot is taken, and takes one again once freed', async () => {
    ollama.set({ mode: 'normal', chunkDelayMs: 30 });
    const { chat, provider } = service({ limit: 1 });
    const first = recorder();
    const handle = chat.start(provider, USER, first.sink);
    const second = recorder();
    let refusal: unknown;
    try {
      chat.start(provider, USER, second.sink);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(ChatError);
    expect((refusal as ChatError).code).toBe('chat.too_many_streams');
    expect((refusal as ChatError).retryAfterS).toBe(1);
    expect(second.ends).toEqual([]);
    await handle.done;
    expect(chat.active).toBe(0);
    await chat.start(provider, USER, recorder().sink).done;
  });

  it('done asked for only after the reply ended (streamed doors never ask) settles with the same ending; a released slot with undefined', async () => {
    ollama.set({ mode: 'normal' });
    const { chat, provider } = service();
    let ended!: () => void;
    const sinkEnded = new Promise<void>((resolve) => (ended = resolve));
    const r = recorder();
    const handle = chat.start(provider, USER, {
      ...r.sink,
      end(ending) {
        r.sink.end(ending);
        ended();
      },
    });
    await sinkEnded;
    // The slot is freed right after the sink's end; done is only asked for now.
    await new Promise((resolve) => setImmediate(resolve));
    expect(chat.active).toBe(0);
    expect(await handle.done).toEqual({ ok: true, finish: 'stop' });
    expect(await handle.done).toBe(r.ends[0]);
    const slot = chat.reserve();
    slot.release();
    expect(await (slot as unknown as { done: Promise<unknown> }).done).toBeUndefined();
    expect(chat.active).toBe(0);
  });

  it('names no provider (chat.no_provider, a 412 at the doors) when none is active or it is the cloud provider', () => {
    for (const active of [{ ok: false, reason: 'none' }, { ok: false, reason: 'cloud', id: 'deskrelay-cloud' }] as ActiveProvider[]) {
      const { chat } = service({ active: () => active });
      expect(() => chat.provider()).toThrowError(expect.objectContaining({ code: 'chat.no_provider' }));
      expect(() => chat.provider()).toThrowError(ChatError);
    }
  });

  it('caps one reply: past the cap the reply ends with one error naming the provider, and the provider request is aborted', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 400 }, () => 'x'.repeat(50)), chunkDelayMs: 2 });
    const { chat, provider } = service({ maxReplyChars: 1_000 });
    const s = specRecorder();
    const ending = await chat.start(provider, USER, s.reply).done;
    expect(ending).toEqual({ ok: false, message: expect.stringMatching(/^Ollama at http:\/\/127\.0\.0\.1:\d+ sent a reply longer than/) });
    expect(s.terminals).toEqual([{ type: 'error', message: (ending as { message: string }).message }]);
    expect(s.tokens.join('').length).toBeLessThanOrEqual(1_000);
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
    expect(chat.active).toBe(0);
  });

  it('cancelAll ends every live chat with the message given', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 100 }, (_, i) => `z${i}`), chunkDelayMs: 20 });
    const { chat, provider } = service();
    const handles = [chat.start(provider, USER, recorder().sink), chat.start(provider, USER, recorder().sink)];
    await new Promise((r) => setTimeout(r, 60));
    await chat.cancelAll('The desktop relay is stopping.', 2_000);
    for (const h of handles) expect(await h.done).toEqual({ ok: false, message: 'The desktop relay is stopping.' });
    expect(chat.active).toBe(0);
  });
});
