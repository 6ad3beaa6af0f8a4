/** Resumable streams: `Idempotency-Key` + `Last-Event-ID` on POST /v1/chat/stream (issue 6, part 1). */
import { describe, expect, it } from 'vitest';
import { OLLAMA_DEFAULT_REPLY, type OllamaStandIn } from '../../fixtures/providers/ollama';
import { sleep } from '../../fixtures/providers/standin';
import { chatBody, chatHeaders, send } from '../../helpers/http';
import { startRelay, type TestRelay } from '../../helpers/relay';
import { ResumableRegistry } from '../../../server/src/doors/resumable/registry';
import { completeBlocks, newKey, parseNumbered, resumable, resumeHeaders, relayWithOllama, withOneSlot } from '../helpers';

const TTL_MS = 400;
const SLOW_REPLY = Array.from({ length: 8 }, (_, i) => `w${i} `);

let t: TestRelay;
let ollama: OllamaStandIn;
relayWithOllama({ keepAliveMs: 100, providerIdleMs: 3_000, resumeTtlMs: TTL_MS }, (s) => ({ t, ollama } = s));

const chatCalls = () => ollama.requests.filter((r) => r.path === '/api/chat').length;
const expectedEvents = (reply: string[]) => [...reply.map((delta) => ({ type: 'token', delta })), { type: 'done', content: reply.join('') }];

describe('numbered events', () => {
  it('puts an id line, counting from 1, before every data line, the terminal event included', async () => {
    const reply = await resumable(t.url, t.token, newKey());
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const events = expectedEvents(OLLAMA_DEFAULT_REPLY);
    // Keep-alives (100 ms here) may fall between events on a busy machine.
    expect(reply.body.replaceAll(': \n\n', '')).toBe(events.map((e, i) => `id: ${i + 1}\ndata: ${JSON.stringify(e)}\n\n`).join(''));
  });

  it('still sends keep-alives while the provider is silent', async () => {
    ollama.set({ mode: 'normal', headersDelayMs: 350 });
    const reply = await resumable(t.url, t.token, newKey());
    expect(reply.body.startsWith(': \n\n')).toBe(true);
    expect(parseNumbered(reply.body).map((e) => e.event)).toEqual(expectedEvents(OLLAMA_DEFAULT_REPLY));
  });
});

describe('resume', () => {
  it('after a disconnect, Last-Event-ID gets exactly the remaining events from the one provider call', async () => {
    ollama.set({ mode: 'normal', reply: SLOW_REPLY, chunkDelayMs: 60 });
    const key = newKey();
    const before = chatCalls();
    const first = await resumable(t.url, t.token, key, { leaveAfter: 2 });
    const seen = parseNumbered(completeBlocks(first.body));
    const lastId = seen.at(-1)!.id!;
    expect(seen.every((e) => e.event.type === 'token')).toBe(true);

    const second = await resumable(t.url, t.token, key, { lastEventId: lastId });
    const rest = parseNumbered(second.body);
    expect(rest[0].id).toBe(lastId + 1);
    const all = [...seen, ...rest];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(all.map((e) => e.event)).toEqual(expectedEvents(SLOW_REPLY));
    expect(chatCalls()).toBe(before + 1);
    // The generation outlived its first client: the provider was never aborted.
    expect(ollama.lastRequestAborted).toBe(false);
  });

  it('the same key without Last-Event-ID replays from the start, then continues live', async () => {
    ollama.set({ mode: 'normal', reply: SLOW_REPLY, chunkDelayMs: 60 });
    const key = newKey();
    const before = chatCalls();
    await resumable(t.url, t.token, key, { leaveAfter: 2 });
    const again = await resumable(t.url, t.token, key);
    expect(parseNumbered(again.body).map((e) => e.event)).toEqual(expectedEvents(SLOW_REPLY));
    expect(parseNumbered(again.body).map((e) => e.id)).toEqual(SLOW_REPLY.map((_, i) => i + 1).concat(SLOW_REPLY.length + 1));
    expect(chatCalls()).toBe(before + 1);
  });

  it('a finished generation stays replayable: from the start, from an id, and past its end', async () => {
    const key = newKey();
    const before = chatCalls();
    const first = await resumable(t.url, t.token, key);
    const replay = await resumable(t.url, t.token, key);
    expect(replay.body.replaceAll(': \n\n', '')).toBe(first.body.replaceAll(': \n\n', ''));
    const tail = await resumable(t.url, t.token, key, { lastEventId: 2 });
    expect(parseNumbered(tail.body)).toEqual(parseNumbered(first.body).slice(2));
    // A client that already has the terminal event gets it again, so the response still ends with one.
    const terminalId = parseNumbered(first.body).at(-1)!.id!;
    const end = await resumable(t.url, t.token, key, { lastEventId: terminalId });
    expect(parseNumbered(end.body)).toEqual(parseNumbered(first.body).slice(-1));
    expect(chatCalls()).toBe(before + 1);
  });

  it('an expired key resumed with Last-Event-ID gets one clear error event and no new provider call; without the header it starts a new generation', async () => {
    const key = newKey();
    const before = chatCalls();
    await resumable(t.url, t.token, key);
    await sleep(TTL_MS + 200);
    ollama.set({ mode: 'normal', reply: ['Fresh'] });
    // The client already has events 1-3 of a reply the desktop no longer keeps: a new reply from
    // id 1 would be spliced into the old one (and the provider paid twice).
    const resumed = await resumable(t.url, t.token, key, { lastEventId: 3 });
    expect(resumed.status).toBe(200);
    const events = parseNumbered(resumed.body);
    expect(events).toHaveLength(1);
    expect(events[0].id).toBeUndefined();
    expect(events[0].event.type).toBe('error');
    expect(events[0].event.message).toMatch(/no longer kept.*send the message again with a new Idempotency-Key/i);
    expect(chatCalls()).toBe(before + 1);
    const again = await resumable(t.url, t.token, key);
    expect(parseNumbered(again.body)).toEqual([
      { id: 1, event: { type: 'token', delta: 'Fresh' } },
      { id: 2, event: { type: 'done', content: 'Fresh' } },
    ]);
    expect(chatCalls()).toBe(before + 2);
  });

  it('a key never seen, sent with Last-Event-ID, gets the same error event', async () => {
    const before = chatCalls();
    const resumed = await resumable(t.url, t.token, newKey(), { lastEventId: 0 });
    const events = parseNumbered(resumed.body);
    expect(events.map((e) => e.event.type)).toEqual(['error']);
    expect(chatCalls()).toBe(before);
  });

  it('a generation nobody resumes is aborted once the TTL passes', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 100 }, (_, i) => `x${i} `), chunkDelayMs: 50 });
    const started = Date.now();
    await resumable(t.url, t.token, newKey(), { leaveAfter: 1 });
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TTL_MS - 50);
  });
});

describe('refusals', () => {
  it('the same key with a different body is 409 chat.idempotency_conflict', async () => {
    const key = newKey();
    await resumable(t.url, t.token, key);
    const reply = await resumable(t.url, t.token, key, { body: chatBody('Something else') });
    expect(reply.status).toBe(409);
    expect(reply.json.error.code).toBe('chat.idempotency_conflict');
    expect(reply.json.error.request_id).toBe(reply.headers['x-request-id']);
  });

  it.each(['short', 'has space in it', 'bad/chars!', 'x'.repeat(129), ''])('a malformed key (%j) is 400 request.invalid_header naming the header', async (key) => {
    const before = chatCalls();
    const reply = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: resumeHeaders(t.token, key), body: chatBody() });
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('request.invalid_header');
    expect(reply.json.error.message).toContain('Idempotency-Key');
    expect(chatCalls()).toBe(before);
  });

  it('the malformed key is reported after auth and before the body is read', async () => {
    const noAuth = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: { ...resumeHeaders('dr_wrong', 'bad'), }, body: chatBody() });
    expect(noAuth.status).toBe(401);
    const badBody = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: resumeHeaders(t.token, 'bad'), body: '{not json' });
    expect(badBody.json.error.code).toBe('request.invalid_header');
  });

  it('a malformed or too high Last-Event-ID is 400 naming that header', async () => {
    const key = newKey();
    const malformed = await resumable(t.url, t.token, key, { lastEventId: 'abc' });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error.message).toContain('Last-Event-ID');
    await resumable(t.url, t.token, key);
    const tooHigh = await resumable(t.url, t.token, key, { lastEventId: 99 });
    expect(tooHigh.status).toBe(400);
    expect(tooHigh.json.error.code).toBe('request.invalid_header');
    expect(tooHigh.json.error.message).toContain('Last-Event-ID');
  });
});

describe('without Idempotency-Key', () => {
  it('is exactly SPEC: no id lines, and a disconnect aborts the provider', async () => {
    const plain = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: { ...chatHeaders(t.token), 'Last-Event-ID': '2' }, body: chatBody() });
    expect(plain.body.replaceAll(': \n\n', '')).toBe(expectedEvents(OLLAMA_DEFAULT_REPLY).map((e) => `data: ${JSON.stringify(e)}\n\n`).join(''));

    ollama.set({ mode: 'normal', reply: SLOW_REPLY, chunkDelayMs: 100 });
    await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody(), abortWhen: (b) => b.includes('"token"') });
    const left = Date.now();
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
    expect(Date.now() - left).toBeLessThan(1_000);
  });
});

describe('limits', () => {
  it('caps the replay buffer: a resume from before dropped events gets a terminal error, a later one works', async () => {
    const capped = await startRelay({ resumeBufferBytes: 300 });
    try {
      capped.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
      const reply = Array.from({ length: 10 }, (_, i) => `piece-${i} `);
      ollama.set({ mode: 'normal', reply });
      const key = newKey();
      const first = await resumable(capped.url, capped.token, key);
      // The live client got everything regardless of the cap.
      expect(parseNumbered(first.body).map((e) => e.event)).toEqual(expectedEvents(reply));

      const fromStart = await resumable(capped.url, capped.token, key);
      const events = parseNumbered(fromStart.body);
      expect(events).toHaveLength(1);
      expect(events[0].id).toBeUndefined();
      expect(events[0].event.type).toBe('error');
      expect(events[0].event.message).toMatch(/Cannot resume after event 0/);

      const lastToken = reply.length;
      const tail = await resumable(capped.url, capped.token, key, { lastEventId: lastToken });
      expect(parseNumbered(tail.body)).toEqual(parseNumbered(first.body).slice(-1));
    } finally {
      await capped.close();
    }
  });

  it('a detached generation holds a stream slot until it ends', async () => {
    await withOneSlot(ollama, SLOW_REPLY, 60, async (one) => {
      const key = newKey();
      await resumable(one.url, one.token, key, { leaveAfter: 1 });
      const other = await send(one.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(one.token), body: chatBody() });
      expect(other.status).toBe(429);
      // Resuming the running generation takes no new slot.
      const resumed = await resumable(one.url, one.token, key, { lastEventId: 1 });
      expect(parseNumbered(resumed.body).at(-1)!.event.type).toBe('done');
    });
  });

  it('stop() ends detached generations and aborts their provider call', async () => {
    const own = await startRelay();
    own.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
    ollama.set({ mode: 'normal', reply: Array.from({ length: 100 }, (_, i) => `y${i} `), chunkDelayMs: 50 });
    await resumable(own.url, own.token, newKey(), { leaveAfter: 1 });
    expect(own.relay.activeStreams).toBe(1);
    await own.close();
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
    expect(own.relay.activeStreams).toBe(0);
  });

  it('keys are scoped to the token: another token cannot reach a generation', () => {
    const registry = new ResumableRegistry(1_000, 1_000);
    const entry = registry.create(registry.scope('dr_old', 'same-key-1'), 'hash', 'local');
    expect(registry.get(registry.scope('dr_old', 'same-key-1'))).toBe(entry);
    expect(registry.get(registry.scope('dr_new', 'same-key-1'))).toBeUndefined();
    registry.clear();
  });

  it('a restarted relay (new token) starts the same key afresh', async () => {
    const own = await startRelay();
    try {
      own.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
      const key = newKey();
      await resumable(own.url, own.token, key);
      await own.relay.stop();
      await own.relay.start();
      const before = chatCalls();
      const reply = await resumable(own.relay.url!, own.relay.token!, key);
      expect(parseNumbered(reply.body).at(-1)!.event.type).toBe('done');
      expect(chatCalls()).toBe(before + 1);
    } finally {
      await own.close();
    }
  });
});

describe('POST /v1/chat/cancel', () => {
  const cancel = (key: string | undefined, token = t.token) =>
    send(t.url, '/v1/chat/cancel', { method: 'POST', headers: { Authorization: `Bearer ${token}`, ...(key ? { 'Idempotency-Key': key } : {}) } });

  it('ends a running keyed generation: the provider call is aborted and the stream ends with one error event', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 40 }, (_, i) => `w${i} `), chunkDelayMs: 100 });
    const key = newKey();
    const before = chatCalls();
    const stream = resumable(t.url, t.token, key);
    await expect.poll(() => chatCalls()).toBe(before + 1);
    const answer = await cancel(key);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ cancelled: true });
    const events = parseNumbered((await stream).body).map((e) => e.event);
    expect(events.at(-1)).toEqual({ type: 'error', message: 'The reply was stopped by the client.' });
    expect(events.filter((e) => e.type === 'error' || e.type === 'done')).toHaveLength(1);
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
    // Idempotent: a second cancel finds nothing running.
    expect((await cancel(key)).json).toEqual({ cancelled: false });
  });

  it('says cancelled: false for an unknown key, needs the key, and is guarded by the token', async () => {
    expect((await cancel(newKey())).json).toEqual({ cancelled: false });
    const missing = await cancel(undefined);
    expect(missing.status).toBe(400);
    expect(missing.json.error.code).toBe('request.invalid_header');
    const wrong = await cancel(newKey(), 'dr_wrong');
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe('auth.invalid_token');
  });

  it('leaves /v1/chat/stream as SPEC has it: DELETE there is still 405 with Allow: POST', async () => {
    const reply = await send(t.url, '/v1/chat/stream', { method: 'DELETE', headers: { Authorization: `Bearer ${t.token}`, 'Idempotency-Key': newKey() } });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe('POST');
  });
});
