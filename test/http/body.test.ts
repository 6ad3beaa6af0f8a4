/**
 * readBody's deadline (http/request.ts): a body that arrives whole with its headers needs no timer
 * and resolves; one that trickles gets 408 at the deadline; and one that someone else already
 * read to its end (it can never end again here) still gets its 408 instead of waiting forever.
 * Real HTTP on loopback.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { readBody } from '../../server/src/http/request';
import { HttpError } from '../../server/src/http/errors';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  server = undefined;
});

/** Serves one request with `read`, sends `body` (all at once, or its first half only), and gives what readBody settled with. */
async function serveOnce(read: (req: IncomingMessage) => Promise<Buffer>, body: string, whole = true): Promise<Buffer | HttpError> {
  let settle!: (v: Buffer | HttpError) => void;
  const outcome = new Promise<Buffer | HttpError>((r) => (settle = r));
  server = createServer((req, res) => {
    read(req).then(settle, (e: HttpError) => settle(e));
    res.end();
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'content-length': Buffer.byteLength(body) } });
  req.on('error', () => {});
  req.on('response', (res) => res.resume());
  if (whole) req.end(body);
  else req.write(body.slice(0, body.length / 2));
  return outcome;
}

it('resolves a body that came with its headers, and gives 408 to one that stops half-way', async () => {
  const got = await serveOnce((req) => readBody(req, { timeoutMs: 300 }), '{"messages":[]}');
  expect(String(got)).toBe('{"messages":[]}');
  const late = await serveOnce((req) => readBody(req, { timeoutMs: 300 }), '{"messages":[]}', false);
  expect(late).toBeInstanceOf(HttpError);
  expect((late as HttpError).status).toBe(408);
});

it('gives 408 at the deadline to a body already read to its end by someone else', async () => {
  const got = await serveOnce(async (req) => {
    req.resume();
    await new Promise((r) => req.once('end', r));
    return readBody(req, { timeoutMs: 300 });
  }, '{"messages":[]}');
  expect(got).toBeInstanceOf(HttpError);
  expect((got as HttpError).status).toBe(408);
});
