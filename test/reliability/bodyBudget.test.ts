/**
 * Issue 21, finding 2: request bodies were buffered before any concurrency check, so 150
 * connections each holding back the last byte of a 9.9 MiB body took the relay from 56 to 1,558
 * MiB. All bodies being read together now share one budget (64 MiB): past it a request gets 503
 * `server.busy` with Retry-After, and each body still has its own deadline. The relay runs in a
 * process of its own so its resident memory can be read.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startOllamaStandIn } from '../fixtures/providers/ollama';
import { chatHeaders, chatRequestBody, request, type RelayChild, sleep, relayChildSuite, waitFor } from './support';

const MiB = 2 ** 20;
const CONNECTIONS = 40;
const BODY_BYTES = 10 * MiB - 100 * 1024;

let relay: RelayChild;

const suite = relayChildSuite(startOllamaStandIn, { model: 'llama3.2', bodyTimeoutMs: 15_000 }, (s) => ({ relay } = s));

/** A chat request with one photo: its first MiB shows content parts, so it may grow to 10 MiB. */
function photoBody(bytes: number): Buffer {
  const head = '{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","mediaType":"image/png","data":"';
  const tail = '"}]}]}';
  return Buffer.concat([Buffer.from(head), Buffer.alloc(bytes - head.length - tail.length, 0x41), Buffer.from(tail)]);
}

interface Holder {
  socket: Socket;
  /** What the relay answered, if it did (a holder that is still being read gets nothing). */
  answer(): string;
  closed(): boolean;
}

/** Sends the head and all of `body` but its last byte, and holds the connection open. */
function holdBack(body: Buffer): Promise<Holder> {
  const u = new URL(relay.url);
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    let got = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => (closed = true));
    socket.on('connect', () => {
      const head = Object.entries({ ...chatHeaders(relay.token), Host: u.host, 'Content-Length': String(body.length) })
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      socket.write(`POST /v1/chat/stream HTTP/1.1\r\n${head}\r\n`);
      // Resolves once the bytes left this process (or the relay stopped reading and answered).
      socket.write(body.subarray(0, body.length - 1), () => resolve({ socket, answer: () => got, closed: () => closed }));
      setTimeout(() => resolve({ socket, answer: () => got, closed: () => closed }), 10_000);
    });
  });
}

async function healthWithinASecond(): Promise<void> {
  const started = Date.now();
  const health = await request(relay.url, '/v1/health', { timeoutMs: 1_000 });
  expect(health.status).toBe(200);
  expect(Date.now() - started).toBeLessThan(1_000);
}

describe('request bodies in flight share one budget', () => {
  it(`${CONNECTIONS} connections each holding back the last byte of a ${(BODY_BYTES / MiB).toFixed(1)} MiB body: the relay holds at most about 64 MiB of them, the rest get 503 server.busy with Retry-After`, async () => {
    const body = photoBody(BODY_BYTES);
    const rssBefore = relay.rss();
    const holders: Holder[] = [];
    try {
      // Eight at a time, so the figure is about what the relay holds, not how fast it can be sent.
      for (let i = 0; i < CONNECTIONS; i += 8) holders.push(...(await Promise.all(Array.from({ length: 8 }, () => holdBack(body)))));
      // A connection past the budget is refused once the relay has read into it; on a loaded machine
      // some are still being read when the last one is sent. Wait for the refusals (the assertion
      // below says how many came), then read what the relay holds.
      const refused = () => holders.filter((h) => h.answer().startsWith('HTTP/1.1 503')).length;
      await waitFor('the connections past the budget refused', refused, (n) => n >= CONNECTIONS - 8, 20_000).catch(() => undefined);
      await sleep(500);
      const rssHeld = relay.rss();
      const grown = (rssHeld - rssBefore) / MiB;
      const busy = holders.filter((h) => h.answer().startsWith('HTTP/1.1 503'));
      const others = holders.filter((h) => !h.answer().startsWith('HTTP/1.1 503')).map((h) => h.answer().split('\r\n')[0] || '(no answer yet)');
      console.log(`body budget: not refused: ${JSON.stringify(others)}`);
      console.log(`body budget: ${CONNECTIONS} × ${(BODY_BYTES / MiB).toFixed(1)} MiB held back; relay RSS ${(rssBefore / MiB).toFixed(0)} → ${(rssHeld / MiB).toFixed(0)} MiB (+${grown.toFixed(0)}); ${busy.length} answered 503`);
      // Without the budget: +400 MiB and more. With it: 64 MiB of bodies plus what reading them costs.
      expect(grown).toBeLessThan(160);
      // 64 MiB holds six of these bodies whole; the connections being read when the budget filled
      // are refused at their next chunk. On this machine all but those six are refused; in a
      // loaded CI run up to ten stayed unanswered (their bytes unread, RSS still bounded above), so
      // the count allows for connections the relay had not read into yet.
      expect(busy.length).toBeGreaterThanOrEqual(CONNECTIONS - 12);
      const answer = busy[0].answer();
      expect(answer).toMatch(/\r\nRetry-After: \d+\r\n/i);
      expect(answer).toMatch(/\r\nConnection: close\r\n/i);
      expect(answer).toContain('"code":"server.busy"');
      await waitFor('refused connections closed', () => busy.every((h) => h.closed()), (all) => all, 5_000);
      await healthWithinASecond();

      // A client that gives up gives its share back: a chat goes through at once.
      for (const h of holders) h.socket.destroy();
      await sleep(200);
      const chat = await request(relay.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(relay.token), body: chatRequestBody(), timeoutMs: 5_000 });
      expect(chat.status).toBe(200);
      expect(chat.body).toContain('"type":"done"');
    } finally {
      // A failure above must not leave the budget taken for the next test.
      for (const h of holders) h.socket.destroy();
    }
  }, 90_000);

  it('a body that never completes gets 408 at its own deadline, which gives its share back', async () => {
    // A relay of its own: the test before leaves connections the relay may still be closing.
    relay = await suite.respawn();
    const body = photoBody(BODY_BYTES);
    const seven = [...(await Promise.all(Array.from({ length: 6 }, () => holdBack(body)))), await holdBack(body)];
    // 64 MiB holds six of these bodies: one of the seven is refused once the relay has read past
    // the budget. Which one depends on the order the relay reads them in: a holder's bytes can
    // still sit in the kernel's socket buffers (several MiB on loopback) after its write returned,
    // and on a loaded machine the seventh's were read first in two CI runs.
    // Each connection's status line (or '-'), so a failure says who got what.
    const statuses = () => seven.map((h) => h.answer().split('\r\n', 1)[0] || '-');
    await waitFor('one of seven refused', statuses, (all) => all.filter((st) => st.startsWith('HTTP/1.1 503')).length === 1, 10_000);
    const held = seven.filter((h) => !h.answer().startsWith('HTTP/1.1 503'));
    expect(held).toHaveLength(6);
    await waitFor('the deadline', () => held.every((h) => h.answer().startsWith('HTTP/1.1 408')), (all) => all, 20_000);
    expect(held.every((h) => h.answer().includes('"code":"request.timeout"'))).toBe(true);
    // Their shares are back: another body is read, not refused.
    const after = await holdBack(body);
    await sleep(300);
    expect(after.answer()).toBe('');
    for (const h of [...seven, after]) h.socket.destroy();
  }, 60_000);
});
