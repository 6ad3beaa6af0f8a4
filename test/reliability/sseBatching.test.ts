/**
 * The SSE writer's hot path (bench/NOTES.md): events written in one tick leave as one write, in
 * order, and the terminal event carries whatever was still pending. Backpressure still works
 * (see clientFaults.test.ts, slow readers).
 */
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { SseStream } from '../../server/src/http/writers';

it('a burst of token events in one tick becomes one response write, then the terminal event ends it', async () => {
  let writes = 0;
  const server = createServer((_req, res: ServerResponse) => {
    const sse = new SseStream(res, { keepAliveMs: 60_000 });
    sse.open();
    // A write is one on the response or, since the writer frames chunks itself, on its socket.
    const write = res.write.bind(res) as (chunk: string) => boolean;
    res.write = ((chunk: string) => {
      writes++;
      return write(chunk);
    }) as typeof res.write;
    // (res.end's own writes to the socket are the terminal event's, not counted here.)
    let ending = false;
    const end = res.end.bind(res) as (chunk: string) => ServerResponse;
    res.end = ((chunk: string) => {
      ending = true;
      return end(chunk);
    }) as typeof res.end;
    const socket = res.socket!;
    const socketWrite = socket.write.bind(socket) as (chunk: string) => boolean;
    socket.write = ((chunk: string) => {
      if (!ending) writes++;
      return socketWrite(chunk);
    }) as typeof socket.write;
    for (let i = 0; i < 200; i++) sse.token(`t${i} `);
    // Next tick: the batch went out as one write; the terminal event follows on its own.
    setImmediate(() => {
      sse.token('last');
      sse.done('unused');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const body = await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
  server.close();
  expect(writes).toBe(1);
  const expected = [...Array.from({ length: 200 }, (_, i) => `t${i} `), 'last'].map((delta) => `data: ${JSON.stringify({ type: 'token', delta })}\n\n`).join('');
  expect(body).toBe(`${expected}data: {"type":"done","content":"unused"}\n\n`);
});

it('a client that leaves mid-stream stops the keep-alive timer at once (none outlives its response)', async () => {
  // The writer's close listener is one function shared by every stream (per-stream heap,
  // bench/NOTES.md); without it a 60 s keep-alive timer would hold the stream for a minute.
  const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
  let counted: (counts: { before: number; open: number; after: number }) => void;
  const counts = new Promise<{ before: number; open: number; after: number }>((resolve) => (counted = resolve));
  const server = createServer((_req, res: ServerResponse) => {
    const before = timers();
    const sse = new SseStream(res, { keepAliveMs: 60_000 });
    sse.open();
    const open = timers();
    sse.token('first');
    res.on('close', () => setImmediate(() => counted({ before, open, after: timers() })));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  // No agent: a pooled socket's idle timer would count as a Timeout too.
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent: false }, (res) => {
    res.once('data', () => req.destroy());
  });
  req.on('error', () => {});
  req.end();
  const { before, open, after } = await counts;
  server.close();
  expect(open).toBe(before + 1);
  expect(after).toBe(before);
});
