/**
 * Issue 7, client faults: 1000 streams aborted at random points, clients that stop reading,
 * slowloris connections. Slots, provider requests and sockets all come back; a slow reader
 * PACES the provider (the relay stops reading from it, TCP pushes back, the provider waits)
 * rather than growing a buffer, and a reader that then leaves aborts the provider request.
 */
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type TestRelay } from '../helpers/relay';
import { type FaultProvider, startFaultProvider } from './faultProvider';
import { chatHeaders, chatRequestBody, heldBytes, request, sleep, strictEvents, waitFor } from './support';

let t: TestRelay;
let p: FaultProvider;

beforeAll(async () => {
  p = await startFaultProvider();
  // The slow-reader case streams a 48 MiB reply: past the default 16 MiB reply cap, which test/reliability/boundedMemory.test.ts covers.
  t = await startRelay({ maxConcurrentStreams: () => 2_000, bodyTimeoutMs: 500, providerIdleMs: 20_000, maxReplyChars: 64 * 2 ** 20 });
  t.useProvider({ id: 'faulty', kind: 'ollama', baseUrl: p.url, model: 'm' });
});
afterAll(async () => {
  await t?.close();
  await p?.close();
});

const relayConnections = () => new Promise<number>((resolve, reject) => t.relay.httpServer!.getConnections((err, n) => (err ? reject(err) : resolve(n))));

async function expectAllFreed() {
  await waitFor('live streams', () => t.relay.activeStreams, (n) => n === 0, 10_000);
  await waitFor('provider requests held by the relay', () => p.openRequests, (n) => n === 0, 10_000);
  await waitFor('client connections to the relay', relayConnections, (n) => n === 0, 10_000);
}

type AbortPlan =
  | { at: 'mid-body' }
  | { at: 'headers' }
  | { at: 'events'; n: number }
  | { at: 'time'; ms: number };

/** One stream the client gives up on as the plan says; resolves with what it saw. */
function abortedStream(plan: AbortPlan): Promise<{ events: number; terminal: boolean }> {
  const u = new URL(t.url);
  return new Promise((resolve) => {
    let seen = '';
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      resolve({ events: (seen.match(/"type":"token"/g) ?? []).length, terminal: /"type":"(done|error)"/.test(seen) });
    };
    const guard = setTimeout(() => req.destroy(), 10_000);
    const body = chatRequestBody();
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: '/v1/chat/stream', method: 'POST', agent: false, headers: { ...chatHeaders(t.token), 'Content-Length': String(body.length) } },
      (res) => {
        res.setEncoding('utf8');
        if (plan.at === 'headers') return req.destroy();
        res.on('data', (d: string) => {
          seen += d;
          if (plan.at === 'events' && (seen.match(/"type":"token"/g) ?? []).length >= plan.n) req.destroy();
        });
        res.on('end', settle);
      },
    );
    req.on('error', () => {});
    req.on('close', settle);
    if (plan.at === 'mid-body') {
      req.write(body.slice(0, 10));
      setTimeout(() => req.destroy(), 5);
      return;
    }
    if (plan.at === 'time') setTimeout(() => req.destroy(), plan.ms);
    req.end(body);
  });
}

describe('client faults', () => {
  it('1000 streams aborted at random points: every slot, provider request and socket is freed', async () => {
    p.mode = 'ok';
    p.lines = 30;
    p.delayMs = 8;
    const planArb: fc.Arbitrary<AbortPlan> = fc.oneof(
      fc.constant<AbortPlan>({ at: 'mid-body' }),
      fc.constant<AbortPlan>({ at: 'headers' }),
      fc.integer({ min: 1, max: 29 }).map((n): AbortPlan => ({ at: 'events', n })),
      fc.integer({ min: 0, max: 300 }).map((ms): AbortPlan => ({ at: 'time', ms })),
    );
    const plans = fc.sample(planArb, { numRuns: 1_000, seed: 7 });
    const servedBefore = p.served;
    const completedBefore = p.completed;
    let finishedAnyway = 0; // streams whose client still saw the terminal event before hanging up
    for (let wave = 0; wave < plans.length; wave += 100) {
      const outcomes = await Promise.all(plans.slice(wave, wave + 100).map(abortedStream));
      finishedAnyway += outcomes.filter((o) => o.terminal).length;
    }
    await expectAllFreed();
    const served = p.served - servedBefore;
    const completed = p.completed - completedBefore;
    // Most streams were cut while the provider was still talking, and those provider requests were
    // aborted rather than run to the end (no more quota spent). A stream the client abandoned only
    // after its terminal event is the one case where the provider finishes.
    // (Bounds loose enough for a busy machine, where an abort can lag behind the provider's last line.)
    expect(served).toBeGreaterThan(300);
    expect(completed).toBeLessThan(finishedAnyway + served / 4);
    expect(served - completed).toBeGreaterThan(served / 2);
    p.lines = 5;
    p.delayMs = 0;
    // And the relay still serves a whole stream.
    const reply = await request(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatRequestBody() });
    expect(strictEvents(reply.body).at(-1)).toEqual({ type: 'done', content: 't0 t1 t2 t3 t4 ' });
  }, 90_000);

  describe('a client that stops reading', () => {
    const LINES = 12_000;
    const LINE_BYTES = 4_096;
    const TOTAL = LINES * LINE_BYTES;

    /** Sends a chat request on a raw socket and does not read the answer (paused from the start). */
    function stalledReader(): Socket {
      const body = chatRequestBody();
      const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
      socket.pause();
      socket.on('error', () => {});
      socket.write(
        `POST /v1/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n${body}`,
      );
      return socket;
    }

    it('paces the provider: the relay buffers a bounded amount, and the stream completes once the client reads again', async () => {
      p.mode = 'firehose';
      p.lines = LINES;
      p.lineBytes = LINE_BYTES;
      const startBytes = p.firehoseBytes;
      const heldBefore = heldBytes();
      const socket = stalledReader();
      // Let the pipes fill: then the provider must stand still, well short of the whole reply.
      await waitFor('provider started', () => p.firehoseBytes - startBytes, (n) => n > 0, 5_000);
      let last = -1;
      await waitFor('provider held back', async () => {
        const now = p.firehoseBytes - startBytes;
        const still = now === last;
        last = now;
        await sleep(300);
        return still;
      }, Boolean, 15_000);
      const written = p.firehoseBytes - startBytes;
      const heldStalled = heldBytes() - heldBefore;
      await sleep(1_000);
      const heldLater = heldBytes() - heldBefore;
      console.log(
        `slow reader: provider wrote ${(written / 2 ** 20).toFixed(1)} MiB of ${(TOTAL / 2 ** 20).toFixed(1)} MiB, then waited; ` +
          `heap+buffers held ${(heldStalled / 2 ** 20).toFixed(1)} MiB, ${(heldLater / 2 ** 20).toFixed(1)} MiB a second later`,
      );
      // Paced: TCP windows and the relay's high-water marks bound what the provider could write.
      expect(written).toBeLessThan(TOTAL / 4);
      // Bounded: what the relay holds (the reply so far, for done.content, plus what is queued) does not grow while the client is stalled.
      expect(heldStalled).toBeLessThan(3 * written + 8 * 2 ** 20);
      expect(heldLater).toBeLessThan(heldStalled + 2 * 2 ** 20);
      expect(t.relay.activeStreams).toBe(1);
      expect(p.openRequests).toBe(1);

      // The reader comes back: everything arrives, in order, ending with done.
      let received = 0;
      let tail = '';
      let tokens = 0;
      let carry = '';
      let sawDone = false;
      socket.setEncoding('utf8');
      const ended = new Promise<void>((resolve) => socket.on('end', resolve).on('close', resolve));
      socket.on('data', (d: string) => {
        received += d.length;
        const text = carry + d;
        tokens += (text.match(/"type":"token"/g) ?? []).length;
        carry = text.slice(-20);
        // Do not count a match twice across the carry.
        if (carry.includes('"type":"token"')) tokens -= 1;
        if (text.includes('"type":"done"')) sawDone = true;
        tail = (tail + d).slice(-200);
        // The terminal event ends the chunked response; the connection itself may stay open (keep-alive).
        if (sawDone && tail.endsWith('"}\n\n\r\n0\r\n\r\n')) socket.end();
      });
      socket.resume();
      await ended;
      expect(received).toBeGreaterThan(TOTAL);
      expect(tokens).toBe(LINES);
      expect(sawDone).toBe(true);
      expect(tail).toMatch(/"\}\n\n\r\n0\r\n\r\n$/);
      await expectAllFreed();
    }, 60_000);

    it('a stalled reader that then leaves aborts the provider request at once', async () => {
      p.mode = 'firehose';
      p.lines = LINES;
      p.lineBytes = LINE_BYTES;
      const completedBefore = p.completed;
      const socket = stalledReader();
      await waitFor('stream open', () => p.openRequests, (n) => n === 1, 5_000);
      await sleep(500);
      socket.destroy();
      await expectAllFreed();
      expect(p.completed).toBe(completedBefore);
    }, 30_000);
  });

  describe('slowloris', () => {
    const open = (): Socket => {
      const s = connect(Number(new URL(t.url).port), '127.0.0.1');
      s.on('error', () => {});
      return s;
    };

    it('200 connections trickling their headers do not keep anyone else from being served', async () => {
      const sockets = Array.from({ length: 200 }, open);
      for (const s of sockets) s.write('POST /v1/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      const header = `X-Slow: ${'a'.repeat(20)}`;
      let i = 0;
      const trickle = setInterval(() => {
        for (const s of sockets) if (!s.destroyed) s.write(header[i % header.length]);
        i++;
      }, 50);
      try {
        await sleep(300);
        p.mode = 'ok';
        p.lines = 5;
        p.delayMs = 0;
        const [health, stream] = await Promise.all([
          request(t.url, '/v1/health'),
          request(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatRequestBody() }),
        ]);
        expect(health.status).toBe(200);
        expect(strictEvents(stream.body).at(-1)).toEqual({ type: 'done', content: 't0 t1 t2 t3 t4 ' });
        expect(sockets.every((s) => !s.destroyed)).toBe(true);
      } finally {
        clearInterval(trickle);
        for (const s of sockets) s.destroy();
      }
      await expectAllFreed();
    }, 30_000);

    it('200 connections trickling a body get 408 request.timeout when the body limit passes, and are closed', async () => {
      const sockets = Array.from({ length: 200 }, open);
      const answers = sockets.map(
        (s) =>
          new Promise<string>((resolve) => {
            let text = '';
            s.setEncoding('utf8');
            s.on('data', (d: string) => (text += d));
            s.on('close', () => resolve(text));
          }),
      );
      for (const s of sockets) {
        s.write(`POST /v1/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
      }
      const trickle = setInterval(() => {
        for (const s of sockets) if (!s.destroyed && s.writable) s.write(' ');
      }, 100);
      let texts: string[];
      try {
        texts = await Promise.race([Promise.all(answers), sleep(10_000).then(() => [] as string[])]);
      } finally {
        clearInterval(trickle);
        for (const s of sockets) s.destroy();
      }
      expect(texts).toHaveLength(200);
      for (const text of texts) {
        expect(text).toMatch(/^HTTP\/1\.1 408 /);
        expect(text).toMatch(/\r\nconnection: close\r\n/i);
        expect(text).toContain('"code":"request.timeout"');
      }
      await expectAllFreed();
    }, 30_000);
  });
});
