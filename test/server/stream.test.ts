/** SPEC §4.2 and CONTRACT §5: the stream's bytes, its keep-alive, thinking, and its one terminal event. */
import { request as httpRequest } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OLLAMA_DEFAULT_REPLY, OLLAMA_DEFAULT_THINKING, OLLAMA_MID_STREAM_ERROR, startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { SPLIT_UTF8_REPLY } from '../fixtures/providers/standin';
import { chatBody, chatHeaders, closedPort, parseEvents, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';

let t: TestRelay;
/** A relay with a 150 ms keep-alive, for the tests about keep-alives; `t` keeps SPEC's 15 s so byte-exact bodies hold on a busy machine. */
let k: TestRelay;
let ollama: OllamaStandIn;

beforeAll(async () => {
  ollama = await startOllamaStandIn();
  t = await startRelay({ providerIdleMs: 3_000 });
  k = await startRelay({ keepAliveMs: 150, providerIdleMs: 3_000 });
});
afterAll(async () => {
  await t.close();
  await k.close();
  await ollama.close();
});
afterEach(() => ollama.set({ mode: 'normal' }));

const useOllama = (model = 'llama3.2') => {
  for (const relay of [t, k]) relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model });
};
const chat = (body = chatBody(), relay = t) => send(relay.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(relay.token), body });

/** The SSE body must be exactly these events, framed `data: <compact json>\n\n`, and nothing else. */
function expectExactFraming(body: string, events: object[]) {
  expect(body).toBe(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(''));
}

describe('a reply', () => {
  it('streams token events then one done, byte for byte, with the CONTRACT headers', async () => {
    useOllama();
    const reply = await chat();
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(reply.headers['cache-control']).toBe('no-cache, no-transform');
    expect(reply.headers['x-accel-buffering']).toBe('no');
    expect(reply.headers['content-length']).toBeUndefined();
    expect(reply.headers['content-encoding']).toBeUndefined();
    expect(reply.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/);
    expectExactFraming(reply.body, [
      ...OLLAMA_DEFAULT_REPLY.map((delta) => ({ type: 'token', delta })),
      { type: 'done', content: OLLAMA_DEFAULT_REPLY.join('') },
    ]);
  });

  it('sends tokens as the provider produces them, not at the end', async () => {
    useOllama();
    ollama.set({ mode: 'normal', chunkDelayMs: 150 });
    const reply = await chat();
    const tokenChunks = reply.chunks.filter((c) => c.text.includes('"type":"token"'));
    expect(tokenChunks.length).toBeGreaterThanOrEqual(3);
    // The first token arrived well before the reply was complete.
    const last = reply.chunks[reply.chunks.length - 1].at;
    expect(tokenChunks[0].at).toBeLessThan(last - 200);
  });

  it('flushes the headers before the provider answers (a cold start still shows a live stream)', async () => {
    useOllama();
    // The provider writes nothing until released: headers that arrive meanwhile came before its answer.
    ollama.set({ mode: 'normal', holdHeaders: true });
    let headers: ((status: number) => void) | undefined;
    const headersArrived = new Promise<number>((resolve) => (headers = resolve));
    const reply = new Promise<{ body: string }>((resolve, reject) => {
      const req = httpRequest(new URL('/v1/chat/stream', t.url), { method: 'POST', headers: chatHeaders(t.token) }, (res) => {
        headers!(res.statusCode ?? 0);
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ body }));
      });
      req.on('error', reject);
      req.end(chatBody());
    });
    const held = await Promise.race([headersArrived, new Promise<'held'>((r) => setTimeout(() => r('held'), 15_000))]);
    ollama.release();
    expect(held, 'the relay held its headers until the provider answered').toBe(200);
    expect(parseEvents((await reply).body).at(-1)).toEqual({ type: 'done', content: OLLAMA_DEFAULT_REPLY.join('') });
  });

  it('carries non-ASCII text whole, even when the provider splits a character across chunks', async () => {
    useOllama();
    ollama.set({ mode: 'split-utf8' });
    const reply = await chat();
    const events = parseEvents(reply.body);
    expect(events.at(-1)).toEqual({ type: 'done', content: SPLIT_UTF8_REPLY.join('') });
    expect(reply.body).not.toContain('\uFFFD');
  });
});

describe('keep-alive', () => {
  it('writes ": \\n\\n" when the interval passes with nothing sent, and only then', async () => {
    useOllama();
    // Cold start: nothing for ~3.5 keep-alive intervals, then the reply.
    ollama.set({ mode: 'normal', headersDelayMs: 520 });
    const reply = await chat(chatBody(), k);
    const pings = reply.body.split(': \n\n').length - 1;
    expect(pings).toBeGreaterThanOrEqual(2);
    expect(pings).toBeLessThanOrEqual(4);
    // The comments come before the first event and are exact; the events after are untouched.
    const firstEvent = reply.body.indexOf('data: ');
    expect(reply.body.slice(0, firstEvent)).toBe(': \n\n'.repeat(pings));
    expectExactFraming(reply.body.slice(firstEvent), [
      ...OLLAMA_DEFAULT_REPLY.map((delta) => ({ type: 'token', delta })),
      { type: 'done', content: OLLAMA_DEFAULT_REPLY.join('') },
    ]);
  });

  it('restarts the interval after every write, so a steady stream gets no comments', async () => {
    useOllama();
    ollama.set({ mode: 'normal', chunkDelayMs: 60, reply: Array.from({ length: 10 }, (_, i) => `w${i} `) });
    const reply = await chat(chatBody(), k);
    // Without the restart a 600 ms stream would carry 3 or 4 comments; a stall on a busy machine may cause one.
    expect(reply.body.split(': \n\n').length - 1).toBeLessThanOrEqual(1);
  });
});

describe('thinking', () => {
  it('wraps message.thinking in <think>…</think> before the answer, and done.content matches the deltas', async () => {
    useOllama('qwen3');
    ollama.set({ mode: 'thinking' });
    const reply = await chat();
    const events = parseEvents(reply.body);
    const deltas = events.filter((e) => e.type === 'token').map((e) => e.delta);
    const expected = `<think>${OLLAMA_DEFAULT_THINKING.join('')}</think>${OLLAMA_DEFAULT_REPLY.join('')}`;
    expect(deltas.join('')).toBe(expected);
    expect(events.at(-1)).toEqual({ type: 'done', content: expected });
    expect(deltas.every((d) => d.length > 0)).toBe(true);
    // Ollama was not asked to think: a model without thinking would answer 400 to that.
    expect(ollama.requests.at(-1)!.body).not.toHaveProperty('think');
  });

  it('closes the tag when the stream ends inside the thinking', async () => {
    useOllama('qwen3');
    ollama.set({ mode: 'thinking', reply: [] });
    const events = parseEvents((await chat()).body);
    const expected = `<think>${OLLAMA_DEFAULT_THINKING.join('')}</think>`;
    expect(events.at(-1)).toEqual({ type: 'done', content: expected });
  });

  it('passes inline <think> text through unchanged', async () => {
    useOllama();
    ollama.set({ mode: 'normal', reply: ['<think>', 'hmm', '</think>', 'Answer', ' </think> stray'] });
    const events = parseEvents((await chat()).body);
    expect(events.at(-1)).toEqual({ type: 'done', content: '<think>hmm</think>Answer </think> stray' });
  });
});

describe('the terminal rule: exactly one done or error, then the end', () => {
  it('ends a provider failure mid-stream with the tokens so far and one error event naming the provider', async () => {
    useOllama();
    ollama.set({ mode: 'mid-stream-error' });
    const reply = await chat();
    const events = parseEvents(reply.body);
    expect(events.slice(0, -1).every((e) => e.type === 'token')).toBe(true);
    expect(events.length).toBeGreaterThanOrEqual(2);
    const last = events.at(-1);
    expect(Object.keys(last)).toEqual(['type', 'message']);
    expect(last.type).toBe('error');
    expect(last.message).toContain(OLLAMA_MID_STREAM_ERROR);
    expect(last.message).toContain(`Ollama at ${ollama.url}`);
    expect(reply.body.endsWith('\n\n')).toBe(true);
    expect(reply.body.match(/"type":"(done|error)"/g)).toHaveLength(1);
  });

  it('turns a missing model into one error event after the 200', async () => {
    useOllama('qwen3');
    ollama.set({ mode: 'http-error', status: 404, errorMessage: 'model "qwen3" not found, try pulling it first' });
    const reply = await chat();
    expect(reply.status).toBe(200);
    const events = parseEvents(reply.body);
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('error');
    expect(events[0].message).toContain('model "qwen3" not found on Ollama at');
  });

  it('turns an unreachable provider into one error event naming where it was looked for', async () => {
    const port = await closedPort();
    t.useProvider({ id: 'local', kind: 'ollama', baseUrl: `http://127.0.0.1:${port}`, model: 'x' });
    const reply = await chat();
    expectExactFraming(reply.body, [{ type: 'error', message: `Ollama at http://127.0.0.1:${port} is not reachable (ECONNREFUSED)` }]);
  });

  it('treats a stream that ends without done:true as a failure, never as done', async () => {
    useOllama();
    ollama.set({ mode: 'no-done' });
    const events = parseEvents((await chat()).body);
    expect(events.at(-1).type).toBe('error');
    expect(events.some((e) => e.type === 'done')).toBe(false);
  });

  it('gives up on a provider that goes silent past the idle limit, with an error event', async () => {
    useOllama();
    ollama.set({ mode: 'hang-after-headers' });
    const reply = await chat(chatBody(), k);
    const events = parseEvents(reply.body);
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('error');
    expect(events[0].message).toContain('Ollama');
    // Keep-alives kept the phone's connection alive meanwhile.
    expect(reply.body.startsWith(': \n\n')).toBe(true);
  });
});

describe('client disconnect', () => {
  it('aborts the provider request at once and frees the stream slot', async () => {
    useOllama();
    ollama.set({ mode: 'normal', chunkDelayMs: 200, reply: Array.from({ length: 50 }, (_, i) => `t${i} `) });
    const before = ollama.requests.length;
    await send(t.url, '/v1/chat/stream', {
      method: 'POST',
      headers: chatHeaders(t.token),
      body: chatBody(),
      abortWhen: (body) => body.includes('"type":"token"'),
    });
    expect(ollama.requests.length).toBe(before + 1);
    const closedAt = Date.now();
    await ollama.lastRequestClosed;
    expect(Date.now() - closedAt).toBeLessThan(1_000);
    expect(ollama.lastRequestAborted).toBe(true);
    await expect.poll(() => t.relay.activeStreams).toBe(0);
  });
});

describe('switching the provider', () => {
  it('takes effect on the next request; a stream in flight keeps the provider it started with', async () => {
    const other = await startOllamaStandIn({ reply: ['Other'] });
    try {
      useOllama();
      ollama.set({ mode: 'normal', chunkDelayMs: 100 });
      const first = chat();
      await expect.poll(() => t.relay.activeStreams).toBe(1);
      t.useProvider({ id: 'other', kind: 'ollama', baseUrl: other.url, model: 'm' });
      const second = await chat();
      expect(parseEvents(second.body).at(-1)).toEqual({ type: 'done', content: 'Other' });
      expect(parseEvents((await first).body).at(-1)).toEqual({ type: 'done', content: OLLAMA_DEFAULT_REPLY.join('') });
      expect(t.logLines).toContain('request POST /v1/chat/stream 200 other');
    } finally {
      await other.close();
    }
  });
});

describe('a failure of our own', () => {
  it('before the stream: a 500 CONTRACT body with no stack trace; during it: one terminal error event', async () => {
    const { SseStream } = await import('../../server/src/http/writers');
    const broken = await startRelay({}, [
      {
        method: 'GET',
        path: '/v1/test/throw-before',
        auth: false,
        handle() {
          throw new Error('boom at /secret/path.ts:12');
        },
      },
      {
        method: 'GET',
        path: '/v1/test/throw-during',
        auth: false,
        handle(_req, res) {
          const sse = new SseStream(res);
          sse.open();
          sse.token('partial');
          throw new Error('boom at /secret/path.ts:12');
        },
      },
    ]);
    try {
      const before = await send(broken.url, '/v1/test/throw-before');
      expect(before.status).toBe(500);
      expect(before.json.error.code).toBe('server.internal_error');
      expect(before.body).not.toContain('boom');
      const during = await send(broken.url, '/v1/test/throw-during');
      expect(during.status).toBe(200);
      expect(parseEvents(during.body)).toEqual([
        { type: 'token', delta: 'partial' },
        { type: 'error', message: expect.stringContaining('unexpected error') },
      ]);
      expect(during.body).not.toContain('boom');
      expect(broken.logLines.some((l) => l.startsWith('error request'))).toBe(true);
    } finally {
      await broken.close();
    }
  });
});
