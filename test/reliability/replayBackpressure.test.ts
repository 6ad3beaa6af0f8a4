/**
 * Issue 21, finding 3: replaying a finished 8 MB resumable reply to 100 clients that never read
 * took the relay from 108 to 1,618 MiB: the whole replay was written at once, whatever the client
 * took. Replay now waits for each client to drain, and at most MAX_ATTACHED clients follow one
 * key (a newer one displaces the oldest). The relay runs in a process of its own so its resident
 * memory can be read; the provider is the raw-socket Ollama stand-in.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { type FaultProvider, startFaultProvider } from './faultProvider';
import { chatHeaders, chatRequestBody, request, type RelayChild, sleep, relayChildSuite, waitFor } from './support';

const MiB = 2 ** 20;
/** What the relay lets follow one key at once (server/src/doors/resumable/registry.ts). */
const MAX_ATTACHED = 4;

let p: FaultProvider;
let relay: RelayChild;

relayChildSuite(startFaultProvider, { model: 'm', maxStreams: 16 }, (s) => ({ provider: p, relay } = s));

/** A finished resumable reply of `lines` × 4 KiB: read to its end once. */
async function finishedReply(key: string, lines: number): Promise<void> {
  p.mode = 'firehose';
  p.lines = lines;
  p.lineBytes = 4_096;
  const reply = await request(relay.url, '/v1/chat/stream', {
    method: 'POST',
    headers: { ...chatHeaders(relay.token), 'Idempotency-Key': key },
    body: chatRequestBody(key),
    timeoutMs: 60_000,
  });
  expect(reply.body).toContain('"type":"done"');
}

interface Stalled {
  socket: Socket;
  closed(): boolean;
  /** The tail of what arrived once the socket was resumed. */
  tail(): string;
}

/** Resumes `key` after its last token (the replay is the done event: the whole 8 MiB reply) and never reads a byte of it. */
function stalledResume(key: string): Promise<Stalled> {
  const u = new URL(relay.url);
  const body = chatRequestBody(key);
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    let closed = false;
    let tail = '';
    socket.on('data', (d: Buffer) => (tail = (tail + d.toString('latin1')).slice(-200)));
    socket.on('error', () => {});
    socket.on('close', () => (closed = true));
    socket.on('connect', () => {
      // Paused before anything arrives: the kernel's receive buffer fills, then the relay's send side.
      socket.pause();
      const head = Object.entries({ ...chatHeaders(relay.token), Host: u.host, 'Idempotency-Key': key, 'Last-Event-ID': '2000', 'Content-Length': String(Buffer.byteLength(body)) })
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      socket.write(`POST /v1/chat/stream HTTP/1.1\r\n${head}\r\n${body}`, () => resolve({ socket, closed: () => closed, tail: () => tail }));
    });
  });
}

describe('resumable replay', () => {
  it(`waits for each client: ${MAX_ATTACHED} stalled clients on each of 6 finished 8 MiB replies barely move the relay's memory`, async () => {
    const keys = Array.from({ length: 6 }, (_, i) => `replay-${i}-${Date.now()}`);
    for (const key of keys) await finishedReply(key, 2_000);
    await sleep(300);
    const before = relay.rss();
    const stalled = await Promise.all(keys.flatMap((key) => Array.from({ length: MAX_ATTACHED }, () => stalledResume(key))));
    await sleep(1_500);
    const after = relay.rss();
    const grown = (after - before) / MiB;
    console.log(`replay backpressure: ${stalled.length} stalled clients on 8 MiB replies; relay RSS ${(before / MiB).toFixed(0)} → ${(after / MiB).toFixed(0)} MiB (+${grown.toFixed(0)})`);
    // Written whole, each replay holds its 9 MiB (the tokens and the done event) again: +200 MiB and more.
    expect(grown).toBeLessThan(60);
    expect(stalled.every((s) => !s.closed())).toBe(true);
    // A client that reads still gets the whole reply, ending in its one done event.
    const reader = await request(relay.url, '/v1/chat/stream', {
      method: 'POST',
      headers: { ...chatHeaders(relay.token), 'Idempotency-Key': keys[0], 'Last-Event-ID': '2000' },
      body: chatRequestBody(keys[0]),
      timeoutMs: 30_000,
    });
    expect(reader.body).toMatch(/id: 2001\ndata: \{"type":"done","content":"/);
    for (const s of stalled) s.socket.destroy();
    const health = await request(relay.url, '/v1/health', { timeoutMs: 1_000 });
    expect(health.status).toBe(200);
  }, 120_000);

  it(`lets at most ${MAX_ATTACHED} clients follow one key: a newer one displaces the oldest`, async () => {
    const key = `attach-${Date.now()}`;
    await finishedReply(key, 2_000);
    const before = relay.rss();
    const stalled: Stalled[] = [];
    for (let i = 0; i < 40; i++) stalled.push(await stalledResume(key));
    await sleep(1_000);
    const grown = (relay.rss() - before) / MiB;
    console.log(`attach limit: 40 stalled clients on one key; relay RSS +${grown.toFixed(0)} MiB`);
    expect(grown).toBeLessThan(60);
    // Now they read: the displaced ones find their connection closed mid-reply; the newest get
    // the whole reply, ending in its done event, on a connection kept alive.
    for (const s of stalled) s.socket.resume();
    await waitFor('older clients displaced', () => stalled.filter((s) => !s.closed()).length, (n) => n === MAX_ATTACHED, 20_000);
    const newest = stalled.slice(-MAX_ATTACHED);
    expect(newest.every((s) => !s.closed())).toBe(true);
    await waitFor('the newest served to the end', () => newest.map((s) => s.tail()), (tails) => tails.every((t) => t.endsWith('"}\n\n\r\n0\r\n\r\n')), 20_000);
    for (const s of stalled) s.socket.destroy();
  }, 120_000);
});
