/**
 * Issue 7, provider faults: whatever the provider does, each stream gets exactly one terminal
 * event, its slot is freed, and the relay lets go of the provider's connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type TestRelay } from '../helpers/relay';
import { type FaultMode, type FaultProvider, MULTIBYTE_REPLY, startFaultProvider } from './faultProvider';
import { chatHeaders, chatRequestBody, request, strictEvents, waitFor } from './support';

// Long enough that a loaded machine (three test files on two cores) reads a reset 30 ms after
// the data before the silence limit fires; short enough that the two stall cases stay quick.
const IDLE_MS = 1500;
const CONCURRENT = 12;

let t: TestRelay;
let p: FaultProvider;

beforeAll(async () => {
  p = await startFaultProvider();
  t = await startRelay({ providerIdleMs: IDLE_MS, maxConcurrentStreams: () => 64 });
  t.useProvider({ id: 'faulty', kind: 'ollama', baseUrl: p.url, model: 'm' });
});
afterAll(async () => {
  await t?.close();
  await p?.close();
});

async function chat() {
  const reply = await request(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatRequestBody() });
  expect(reply.status).toBe(200);
  expect(reply.headers['content-type']).toBe('text/event-stream; charset=utf-8');
  return strictEvents(reply.body);
}

/** Runs `CONCURRENT` streams against one fault; returns their terminal events once every slot and provider socket is free. */
async function underFault(mode: FaultMode) {
  p.mode = mode;
  const results = await Promise.all(Array.from({ length: CONCURRENT }, () => chat()));
  await waitFor('live streams', () => t.relay.activeStreams, (n) => n === 0, 5_000);
  await waitFor('provider sockets held by the relay', () => p.openRequests, (n) => n === 0, 5_000);
  return results.map((events) => events[events.length - 1]);
}

describe('provider faults', () => {
  const failing: [FaultMode, RegExp][] = [
    // A reset right after data may surface as a read error or as a body that ended early.
    ['reset', /dropped the connection|without finishing it/],
    ['garbage-wire', /dropped the connection|not reachable/],
    ['garbage-body', /not valid JSON/],
    ['stall', /sent nothing for 1\.5 s/],
    ['empty-200', /without finishing it/],
    ['headers-then-close', /dropped the connection|without finishing it/],
    ['headers-then-stall', /sent nothing for 1\.5 s/],
  ];
  for (const [mode, said] of failing) {
    it(`${mode}: one terminal error event each, slot and provider connection freed`, async () => {
      const terminals = await underFault(mode);
      for (const terminal of terminals) {
        expect(terminal.type).toBe('error');
        expect(terminal.message).toMatch(said);
        expect(terminal.message).toMatch(/^Ollama at http:\/\/127\.0\.0\.1:\d+/);
      }
    });
  }

  it('invalid UTF-8 from the provider: replaced, not passed on; one done event', async () => {
    const terminals = await underFault('invalid-utf8');
    for (const terminal of terminals) {
      expect(terminal.type).toBe('done');
      expect(terminal.content).toMatch(/^bad:\uFFFD+:bytes then fine$/);
    }
  });

  it('a multi-byte character split across chunks arrives whole', async () => {
    const terminals = await underFault('split-utf8');
    for (const terminal of terminals) expect(terminal).toEqual({ type: 'done', content: MULTIBYTE_REPLY.join('') });
  });

  it('a steady stream that lasts longer than the idle limit is not cut (the limit is for silence, not length)', async () => {
    // Lines 100 ms apart: twice the idle limit in all, never more than a tenth of it silent.
    const lines = Math.ceil((2 * IDLE_MS) / 100);
    p.lines = lines;
    p.delayMs = 100;
    try {
      const terminals = await underFault('ok');
      for (const terminal of terminals) expect(terminal).toEqual({ type: 'done', content: Array.from({ length: lines }, (_, i) => `t${i} `).join('') });
    } finally {
      p.lines = 5;
      p.delayMs = 0;
    }
  });

  it('the endless provider line: bounded in time and memory, one error each, provider connections dropped, /v1/health within 1 s', async () => {
    const rss0 = process.memoryUsage().rss;
    const started = Date.now();
    const sent0 = p.endlessBytes;
    p.mode = 'endless-line';
    const terminals = await underFault('endless-line');
    const tookMs = Date.now() - started;
    for (const terminal of terminals) {
      expect(terminal.type).toBe('error');
      expect(terminal.message).toMatch(/^Ollama at http:\/\/127\.0\.0\.1:\d+ sent a line longer than 1 MiB$/);
    }
    expect(tookMs).toBeLessThan(15_000);
    // Each request was read to about its cap (plus what the sockets held), not to the provider's 1 GiB.
    expect((p.endlessBytes - sent0) / CONCURRENT).toBeLessThan(32 * 1024 * 1024);
    expect(process.memoryUsage().rss - rss0).toBeLessThan(300 * 1024 * 1024);
    const t0 = Date.now();
    const health = await request(t.url, '/v1/health', { timeoutMs: 1_000 });
    expect(health.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });

  it('after every fault the relay still serves a healthy stream', async () => {
    p.mode = 'ok';
    const events = await chat();
    expect(events[events.length - 1]).toEqual({ type: 'done', content: 't0 t1 t2 t3 t4 ' });
  });
});
