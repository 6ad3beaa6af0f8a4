/**
 * Issue 18, findings 2 and 3: memory stays bounded against a provider that never stops talking
 * and against a token holder who floods resumable streams. Each case is bounded in time, checks
 * what the process holds after a full GC, and that the relay still answers /v1/health within a
 * second afterwards.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type TestRelay } from '../helpers/relay';
import { type FaultProvider, startFaultProvider } from './faultProvider';
import { chatHeaders, chatRequestBody, heldBytes, request, sleep, strictEvents, waitFor } from './support';

const MiB = 2 ** 20;
let t: TestRelay;
let p: FaultProvider;

beforeAll(async () => {
  p = await startFaultProvider();
  t = await startRelay({ maxConcurrentStreams: () => 16, providerIdleMs: 20_000, resumeTtlMs: 60_000, resumeErrorTtlMs: 300 });
  t.useProvider({ id: 'faulty', kind: 'ollama', baseUrl: p.url, model: 'm' });
});
afterAll(async () => {
  await t?.close();
  await p?.close();
});

async function healthWithinASecond(): Promise<void> {
  const started = Date.now();
  const health = await request(t.url, '/v1/health', { timeoutMs: 1_000 });
  expect(health.status).toBe(200);
  expect(Date.now() - started).toBeLessThan(1_000);
}

/** A resumable chat whose client leaves after the first bytes of the answer. */
function leaveEarly(key: string): Promise<void> {
  const u = new URL(t.url);
  const body = chatRequestBody(key);
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: '/v1/chat/stream', method: 'POST', agent: false, headers: { ...chatHeaders(t.token), 'Idempotency-Key': key } },
      (res) => res.once('data', () => (req.destroy(), resolve())),
    );
    req.on('error', () => resolve());
    req.end(body);
  });
}

describe('memory stays bounded', () => {
  it('a provider that never stops talking: the reply ends at 16 MiB with one error naming the provider, the provider request is aborted', async () => {
    p.mode = 'firehose';
    p.lines = 1_000_000; // 4 GB of reply if nothing stopped it
    p.lineBytes = 4_096;
    const before = heldBytes();
    const completedBefore = p.completed;
    const reply = await request(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatRequestBody(), timeoutMs: 50_000 });
    const events = strictEvents(reply.body);
    const last = events.at(-1)!;
    expect(last.type).toBe('error');
    expect(last.message).toMatch(new RegExp(`^Ollama at ${p.url.replace(/[.]/g, '\\.')} sent a reply longer than 16 MiB`));
    const streamed = events.slice(0, -1).reduce((n, e) => n + e.delta!.length, 0);
    expect(streamed).toBeLessThanOrEqual(16 * MiB);
    expect(streamed).toBeGreaterThan(15 * MiB);
    await waitFor('provider request closed', () => p.openRequests, (n) => n === 0, 5_000);
    expect(p.completed).toBe(completedBefore);
    await waitFor('slot freed', () => t.relay.activeStreams, (n) => n === 0, 5_000);
    expect(heldBytes() - before).toBeLessThan(48 * MiB);
    await healthWithinASecond();
  }, 60_000);

  it('a flood of resumable generations, each left after its first byte, stays within the global budget; evicted keys start afresh', async () => {
    p.mode = 'firehose';
    p.lines = 1_000; // about 4 MiB per reply, kept whole in its done event
    p.lineBytes = 4_096;
    const before = heldBytes();
    const servedBefore = p.served;
    const keys = Array.from({ length: 64 }, (_, i) => `flood-${String(i).padStart(4, '0')}-${Date.now()}`);
    // Four in flight at a time, as the review's attack did.
    for (let i = 0; i < keys.length; i += 4) {
      await Promise.all(keys.slice(i, i + 4).map(leaveEarly));
      await waitFor('generations finished', () => t.relay.activeStreams, (n) => n === 0, 20_000);
    }
    expect(p.served - servedBefore).toBe(keys.length);
    const held = heldBytes() - before;
    console.log(`resumable flood: ${keys.length} generations of ~4 MiB; held ${(held / MiB).toFixed(1)} MiB after GC`);
    // 64 generations × ~4 MiB would be ~256 MiB without the budget; it keeps at most 64 MiB.
    expect(held).toBeLessThan(100 * MiB);
    // The newest generation is still replayable from memory (its terminal event, id 1001 after
    // 1,000 tokens): no new provider call.
    p.mode = 'ok';
    p.lines = 3;
    const newest = await request(t.url, '/v1/chat/stream', {
      method: 'POST',
      headers: { ...chatHeaders(t.token), 'Idempotency-Key': keys.at(-1)!, 'Last-Event-ID': '1001' },
      body: chatRequestBody(keys.at(-1)!),
    });
    expect(newest.status).toBe(200);
    expect(newest.body).toMatch(/id: 1001\ndata: \{"type":"done","content":"0000000 x/);
    expect(p.served - servedBefore).toBe(keys.length);
    // The oldest was evicted: like an expired key, it starts a new generation.
    const oldest = await request(t.url, '/v1/chat/stream', {
      method: 'POST',
      headers: { ...chatHeaders(t.token), 'Idempotency-Key': keys[0] },
      body: chatRequestBody(keys[0]),
    });
    expect(oldest.body).toContain('"type":"done","content":"t0 t1 t2 "');
    expect(p.served - servedBefore).toBe(keys.length + 1);
    await healthWithinASecond();
  }, 90_000);

  it('a generation that ended in an error is kept for less time than one that finished', async () => {
    p.mode = 'ok';
    p.lines = 2;
    const okKey = `kept-ok-${Date.now()}`;
    await request(t.url, '/v1/chat/stream', { method: 'POST', headers: { ...chatHeaders(t.token), 'Idempotency-Key': okKey }, body: chatRequestBody(okKey) });
    p.mode = 'reset';
    const errKey = `kept-err-${Date.now()}`;
    const failed = await request(t.url, '/v1/chat/stream', { method: 'POST', headers: { ...chatHeaders(t.token), 'Idempotency-Key': errKey }, body: chatRequestBody(errKey) });
    expect(failed.body).toContain('"type":"error"');
    await sleep(700);
    const servedBefore = p.served;
    p.mode = 'ok';
    // The finished one replays from memory; the failed one was forgotten and runs again.
    await request(t.url, '/v1/chat/stream', { method: 'POST', headers: { ...chatHeaders(t.token), 'Idempotency-Key': okKey }, body: chatRequestBody(okKey) });
    expect(p.served).toBe(servedBefore);
    const again = await request(t.url, '/v1/chat/stream', { method: 'POST', headers: { ...chatHeaders(t.token), 'Idempotency-Key': errKey }, body: chatRequestBody(errKey) });
    expect(again.body).toContain('"type":"done"');
    expect(p.served).toBe(servedBefore + 1);
  }, 30_000);
});
