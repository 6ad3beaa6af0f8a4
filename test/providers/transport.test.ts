/**
 * The provider connection's life (server/src/providers/transport.ts): a reply read to its end
 * gives its connection back to the pool, one whose body stays open after the end marker is cut
 * after a short grace rather than pooled or waited for, and an answer that arrives whole in one
 * TCP write (headers, body and terminator) is read whole.
 *
 * The provider is an Ollama on raw `net` sockets, so the test sees every connection and decides
 * when the chunked body's terminator goes out. Its bytes are what Ollama's Go server writes for
 * `/api/chat` with `stream: true` (Ollama docs, api.md "Generate a chat completion"; Go net/http
 * chunked encoding, one chunk per flushed line, `0\r\n\r\n` when the handler returns).
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdapter } from '../../server/src/providers';
import { goJson } from '../fixtures/providers/standin';
import { waitFor } from '../reliability/support';
import { deps, run } from './helpers';

const line = (content: string) => `${goJson({ model: 'm', created_at: '2025-06-05T10:11:12.123456Z', message: { role: 'assistant', content }, done: false })}\n`;
const DONE = `${goJson({ model: 'm', created_at: '2025-06-05T10:11:13.123456Z', message: { role: 'assistant', content: '' }, done_reason: 'stop', done: true, eval_count: 2 })}\n`;
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
const HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nDate: Thu, 05 Jun 2025 10:11:12 GMT\r\nTransfer-Encoding: chunked\r\n\r\n';

/**
 * How the raw provider ends each answer: the terminator with the rest, 20 ms after the done line
 * (within the relay's grace for a tail), or never (the body stays open).
 */
type Ending = 'whole' | 'late' | 'open';

async function rawOllama(ending: () => Ending) {
  const sockets: Socket[] = [];
  const closed: Socket[] = [];
  /** Requests served per socket. */
  const served = new Map<Socket, number>();
  let requests = 0;
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    socket.on('close', () => closed.push(socket));
    let seen = '';
    socket.on('data', (d: Buffer) => {
      seen += d.toString('latin1');
      // One request per complete head + JSON body (the adapter always sends Content-Length).
      for (;;) {
        const end = seen.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(seen.slice(0, end))?.[1] ?? 0);
        if (seen.length < end + 4 + length) return;
        seen = seen.slice(end + 4 + length);
        requests++;
        served.set(socket, (served.get(socket) ?? 0) + 1);
        const body = HEAD + chunk(line('Hi')) + chunk(line(' there')) + chunk(DONE);
        const how = ending();
        // One write: the answer arrives whole, before anyone reads its body.
        socket.write(how === 'whole' ? `${body}0\r\n\r\n` : body);
        if (how === 'late') setTimeout(() => socket.write('0\r\n\r\n'), 20);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sockets,
    closed,
    served,
    get requests() {
      return requests;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let provider: Awaited<ReturnType<typeof rawOllama>> | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

describe('provider connections', () => {
  it('a reply read to its end gives the connection back: the next reply goes over the same one', async () => {
    provider = await rawOllama(() => 'whole');
    const adapter = createAdapter({ id: 'p', kind: 'ollama', baseUrl: provider.url, model: 'm' }, deps());
    for (let i = 0; i < 3; i++) {
      const out = await run(adapter);
      expect(out.error).toBeUndefined();
      expect(out.text).toBe('Hi there');
      expect(out.finish).toBe('stop');
      // undici's pool takes a connection back one turn after its body ended; a request sent in
      // the same turn opens another (undici's behaviour, old transport and new alike).
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(provider.requests).toBe(3);
    expect([...provider.served.values()]).toEqual([3]);
    expect(provider.closed).toHaveLength(0);
  });

  it('a terminator that comes just after the done line: the reply ends at the done line, and the connection still goes back to the pool', async () => {
    provider = await rawOllama(() => 'late');
    const adapter = createAdapter({ id: 'p', kind: 'ollama', baseUrl: provider.url, model: 'm' }, deps());
    for (let i = 0; i < 3; i++) {
      const out = await run(adapter);
      expect(out.text).toBe('Hi there');
      expect(out.finish).toBe('stop');
      // The tail comes 20 ms later; the next request waits for the connection to be free again.
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    expect([...provider.served.values()]).toEqual([3]);
    expect(provider.closed).toHaveLength(0);
  });

  it('a body left open after the done line: the reply ends at once, the connection is cut (not pooled), the next reply gets a new one', async () => {
    provider = await rawOllama(() => 'open');
    // The idle limit is far away: the reply must end at its done line, not at the limit.
    const adapter = createAdapter({ id: 'p', kind: 'ollama', baseUrl: provider.url, model: 'm' }, deps({ idleTimeoutMs: 60_000 }));
    const out = await run(adapter);
    expect(out.error).toBeUndefined();
    expect(out.text).toBe('Hi there');
    expect(out.finish).toBe('stop');
    const first = provider.sockets[0];
    await waitFor('the open connection cut by the relay', () => provider!.closed.includes(first), (cut) => cut, 5_000);
    const again = await run(adapter);
    expect(again.text).toBe('Hi there');
    // The cut connection carried its one request and no other.
    expect(provider.served.get(first)).toBe(1);
    expect(provider.requests).toBe(2);
  });
});
