/**
 * A misbehaving Ollama on raw `net` sockets, for faults a well-behaved HTTP server cannot
 * produce: resets, garbage on the wire, invalid UTF-8, characters cut across TCP writes,
 * stalls, empty bodies, headers with nothing after them.
 *
 *   const p = await startFaultProvider();
 *   p.mode = 'reset';          // what the next /api/chat does
 *   p.url                      // baseUrl for an `ollama` provider (give it a model: no /api/tags here)
 *   p.openRequests             // requests whose connection is still open (a relay that is done with one closes it)
 *   p.served / p.completed     // requests answered / answered to the end
 *   await p.close()
 *
 * Every answer uses `Connection: close`, so one request is one socket and `openRequests` is
 * exactly the number of provider requests the relay still holds. (After an aborted fetch,
 * Node's undici opens a spare connection that sends nothing and closes it after its 4 s
 * keep-alive timeout; such connections carry no request and are not counted.)
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';

export type FaultMode =
  /** `lines` good lines `delayMs` apart, then the done line: a healthy reply. */
  | 'ok'
  /** Headers and two lines, then a TCP reset (RST, not FIN). */
  | 'reset'
  /** Headers and a line, then random bytes that are neither chunk framing nor JSON. */
  | 'garbage-wire'
  /** Headers, a line, then a well-framed chunk whose content is random bytes. */
  | 'garbage-body'
  /** A content line carrying bytes that are not UTF-8 (0xff 0xfe, a lone continuation byte), then done. */
  | 'invalid-utf8'
  /** Each multi-byte character of MULTIBYTE_REPLY cut between two TCP writes, then done. */
  | 'split-utf8'
  /** Headers and one line, then silence with the socket open. */
  | 'stall'
  /** 200 with `Content-Length: 0`. */
  | 'empty-200'
  /** 200 headers (chunked), then the socket closes without a single chunk. */
  | 'headers-then-close'
  /** 200 headers (chunked), then silence with the socket open. */
  | 'headers-then-stall'
  /** `lines` lines of `lineBytes` content as fast as the relay takes them (waits for drain), then done. */
  | 'firehose'
  /**
   * One line that never ends: after a good line, bytes without a newline as fast as the relay
   * takes them, up to 1 GiB (issue 18 #2: this took the relay to 3.1 GB and an out-of-memory crash).
   */
  | 'endless-line';

export const MULTIBYTE_REPLY = ['Grüße ', '🌍🚀 ', 'naïve ', '日本語', ' ∑'];

export interface FaultProvider {
  url: string;
  mode: FaultMode;
  /** Lines and pacing for `ok`. */
  lines: number;
  delayMs: number;
  /** Content size of each `firehose` line. */
  lineBytes: number;
  /** Bytes handed to the kernel so far by `firehose` answers (never more than it accepted plus one line). */
  readonly firehoseBytes: number;
  /** Bytes handed to the kernel so far by `endless-line` answers. */
  readonly endlessBytes: number;
  readonly openRequests: number;
  readonly served: number;
  readonly completed: number;
  close(): Promise<void>;
}

const HEADERS = 'HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n';

const chunk = (data: string | Buffer) => {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);
};

export const contentLine = (content: string) =>
  `${JSON.stringify({ model: 'm', created_at: '2025-06-05T10:11:12.123456Z', message: { role: 'assistant', content }, done: false })}\n`;
const DONE_LINE = `${JSON.stringify({ model: 'm', created_at: '2025-06-05T10:11:13.123456Z', message: { role: 'assistant', content: '' }, done_reason: 'stop', done: true })}\n`;
const LAST_CHUNK = '0\r\n\r\n';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

type Settings = Pick<FaultProvider, 'mode' | 'lines' | 'delayMs' | 'lineBytes'>;
type Counters = { -readonly [K in 'firehoseBytes' | 'endlessBytes' | 'served' | 'completed']: number };

export async function startFaultProvider(initial: FaultMode = 'ok'): Promise<FaultProvider> {
  const sockets = new Set<Socket>();
  const withRequest = new Set<Socket>();
  // The handle is the state itself: tests set its settings and read its counters directly.
  const p: Omit<FaultProvider, keyof Counters> & Counters = {
    url: '',
    mode: initial,
    lines: 5,
    delayMs: 0,
    lineBytes: 1024,
    firehoseBytes: 0,
    endlessBytes: 0,
    served: 0,
    completed: 0,
    get openRequests() {
      return withRequest.size;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      withRequest.delete(socket);
    });
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = buf.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length < end + 4 + length) return;
      socket.off('data', onData);
      withRequest.add(socket);
      p.served++;
      // The settings as they are now: a test may change them for the next request meanwhile.
      const settings: Settings = { mode: p.mode, lines: p.lines, delayMs: p.delayMs, lineBytes: p.lineBytes };
      void answer(socket, settings, p).then((ok) => {
        if (ok) p.completed++;
      });
    };
    socket.on('data', onData);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  p.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return p;
}

/** Resolves true on 'drain', false once the socket closed. */
function drained(socket: Socket): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => () => {
      socket.off('drain', onDrain).off('close', onClose);
      resolve(ok);
    };
    const onDrain = done(true);
    const onClose = done(false);
    socket.once('drain', onDrain).once('close', onClose);
  });
}

/** Writes unless the relay already hung up; false once it has. */
function put(socket: Socket, data: string | Buffer): boolean {
  if (socket.destroyed || !socket.writable) return false;
  socket.write(data);
  return true;
}

async function answer(socket: Socket, s: Settings, counters: Pick<Counters, 'firehoseBytes' | 'endlessBytes'>): Promise<boolean> {
  switch (s.mode) {
    case 'endless-line': {
      put(socket, HEADERS);
      put(socket, chunk(contentLine('before ')));
      const filler = chunk(`{"model":"m","message":{"role":"assistant","content":"${'x'.repeat(64 * 1024)}`);
      for (let sent = 0; sent < 1024 * 1024 * 1024; sent += filler.length) {
        if (socket.destroyed || !socket.writable) return false;
        counters.endlessBytes += filler.length;
        if (!socket.write(filler) && !(await drained(socket))) return false;
      }
      socket.end(LAST_CHUNK);
      return true;
    }
    case 'firehose': {
      put(socket, HEADERS);
      const filler = 'x'.repeat(Math.max(0, s.lineBytes - 8));
      for (let i = 0; i < s.lines; i++) {
        if (socket.destroyed || !socket.writable) return false;
        const data = chunk(contentLine(`${String(i).padStart(7, '0')} ${filler}`));
        counters.firehoseBytes += data.length;
        // A real server is paced by TCP: it writes only as fast as the relay reads.
        if (!socket.write(data) && !(await drained(socket))) return false;
      }
      if (!put(socket, chunk(DONE_LINE))) return false;
      socket.end(LAST_CHUNK);
      return true;
    }
    case 'ok': {
      put(socket, HEADERS);
      for (let i = 0; i < s.lines; i++) {
        if (!put(socket, chunk(contentLine(`t${i} `)))) return false;
        if (s.delayMs > 0) await sleep(s.delayMs);
      }
      if (!put(socket, chunk(DONE_LINE))) return false;
      socket.end(LAST_CHUNK);
      return true;
    }
    case 'reset':
      put(socket, HEADERS);
      put(socket, chunk(contentLine('before ')));
      put(socket, chunk(contentLine('the reset ')));
      await sleep(30);
      socket.resetAndDestroy();
      return false;
    case 'garbage-wire': {
      put(socket, HEADERS);
      put(socket, chunk(contentLine('before ')));
      await sleep(20);
      put(socket, garbage(512));
      await sleep(20);
      socket.end();
      return false;
    }
    case 'garbage-body':
      put(socket, HEADERS);
      put(socket, chunk(contentLine('before ')));
      await sleep(20);
      put(socket, chunk(Buffer.concat([garbage(300), Buffer.from('\n')])));
      await sleep(20);
      put(socket, chunk(DONE_LINE));
      socket.end(LAST_CHUNK);
      return true;
    case 'invalid-utf8': {
      put(socket, HEADERS);
      const [before, after] = contentLine('bad:@@@:bytes').split('@@@');
      put(socket, chunk(Buffer.concat([Buffer.from(before), Buffer.from([0xff, 0xfe, 0x80, 0xc3]), Buffer.from(after)])));
      put(socket, chunk(contentLine(' then fine')));
      put(socket, chunk(DONE_LINE));
      socket.end(LAST_CHUNK);
      return true;
    }
    case 'split-utf8': {
      put(socket, HEADERS);
      for (const piece of MULTIBYTE_REPLY) {
        const bytes = Buffer.from(contentLine(piece), 'utf8');
        // Cut inside the first multi-byte character: a continuation byte starts the second half.
        let cut = bytes.findIndex((b, i) => i > 0 && (b & 0xc0) === 0x80);
        if (cut < 0) cut = bytes.length >> 1;
        // Each half is its own chunk and its own TCP write, far enough apart to arrive separately.
        if (!put(socket, chunk(bytes.subarray(0, cut)))) return false;
        await sleep(15);
        if (!put(socket, chunk(bytes.subarray(cut)))) return false;
        await sleep(5);
      }
      put(socket, chunk(DONE_LINE));
      socket.end(LAST_CHUNK);
      return true;
    }
    case 'stall':
      put(socket, HEADERS);
      put(socket, chunk(contentLine('then silence ')));
      return false;
    case 'empty-200':
      socket.end('HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return true;
    case 'headers-then-close':
      put(socket, HEADERS);
      await sleep(20);
      socket.end();
      return false;
    case 'headers-then-stall':
      put(socket, HEADERS);
      return false;
  }
}

/** Bytes that are no valid chunk framing, no UTF-8 and no JSON (fixed pattern, so runs repeat). */
function garbage(n: number): Buffer {
  const out = Buffer.alloc(n);
  let x = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) & 0xff | 0x80;
  }
  return out;
}
