/**
 * Issue 21, finding 1: malformed WebSocket frames against `deskrelay serve` (the built bundle in a
 * child process). Each case opens a real handshake on raw TCP, sends bytes no client library
 * would, and expects that socket alone to be closed with RFC 6455's close code (1002 protocol
 * error, 1007 bad UTF-8, 1009 too big), one log line naming it, the process still running and
 * `/v1/health` answering. The frames are built by hand (RFC 6455 §5.2).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { closedPort } from '../helpers/http';
import { request, waitFor } from './support';

const CLI = resolve(__dirname, '../../dist/cli.js');

let ollama: OllamaStandIn;
let child: ChildProcess;
let dir: string;
let url: string;
let token: string;
let stderr = '';
let exitedWith: string | undefined;

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run "npm run build" first (npm test does)');
  ollama = await startOllamaStandIn();
  dir = mkdtempSync(join(tmpdir(), 'deskrelay-wsframes-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ activeProvider: 'local', providers: [{ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' }] }));
  const port = await closedPort();
  child = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.once('exit', (code, signal) => (exitedWith = `exit ${code} ${signal ?? ''}`));
  await waitFor('the pairing line', () => out, (o) => /\{"url":"[^"]+","token":"dr_[^"]+"\}/.test(o));
  ({ url, token } = JSON.parse(/\{"url":"[^"]+","token":"dr_[^"]+"\}/.exec(out)![0]) as { url: string; token: string });
}, 20_000);
afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await ollama?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One frame as a client sends it: masked unless told otherwise. */
function frame(opts: { fin?: boolean; rsv?: number; opcode: number; payload?: Buffer; mask?: boolean; announce?: bigint }): Buffer {
  const payload = opts.payload ?? Buffer.alloc(0);
  const mask = opts.mask ?? true;
  const length = opts.announce ?? BigInt(payload.length);
  const head: number[] = [((opts.fin ?? true) ? 0x80 : 0) | ((opts.rsv ?? 0) << 4) | opts.opcode];
  const maskBit = mask ? 0x80 : 0;
  let ext = Buffer.alloc(0);
  if (length < 126n) head.push(maskBit | Number(length));
  else if (length < 65_536n) {
    head.push(maskBit | 126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(Number(length));
  } else {
    head.push(maskBit | 127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(length);
  }
  if (!mask) return Buffer.concat([Buffer.from(head), ext, payload]);
  const key = randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ key[i % 4]));
  return Buffer.concat([Buffer.from(head), ext, key, masked]);
}

interface Closed {
  /** The code of the server's close frame, or undefined when the socket ended without one. */
  code: number | undefined;
  ended: boolean;
}

/** A real handshake on raw TCP, then `bytes`; resolves with the server's close frame once the socket ends. */
function afterHandshake(bytes: Buffer[], leaveAfterMs?: number): Promise<Closed> {
  const { hostname, port } = new URL(url);
  return new Promise((resolvePromise, reject) => {
    const socket: Socket = connect(Number(port), hostname);
    let got = Buffer.alloc(0);
    let upgraded = false;
    const timer = setTimeout(() => (socket.destroy(), reject(new Error(`no close within 10 s; got ${got.toString('latin1').slice(0, 200)}`))), 10_000);
    socket.on('connect', () =>
      socket.write(
        `GET /v1/chat/ws HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      ),
    );
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (!upgraded) {
        const end = got.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = got.subarray(0, end).toString('latin1');
        if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(`handshake refused: ${head}`));
        upgraded = true;
        got = got.subarray(end + 4);
        for (const b of bytes) socket.write(b);
        // A partial frame leaves the relay waiting for the rest: the client goes away instead.
        if (leaveAfterMs !== undefined) setTimeout(() => socket.destroy(), leaveAfterMs);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      // The server's close frame: 0x88, length, then the 2-byte code.
      const at = got.indexOf(0x88);
      const code = at !== -1 && got.length >= at + 4 ? got.readUInt16BE(at + 2) : undefined;
      resolvePromise({ code, ended: true });
    });
  });
}

async function relayStillServes(): Promise<void> {
  expect(exitedWith).toBeUndefined();
  const health = await request(url, '/v1/health', { timeoutMs: 2_000 });
  expect(health.status).toBe(200);
}

const text = (s: string) => Buffer.from(s, 'utf8');
const chat = text(JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }] }));

const CASES: { name: string; bytes: Buffer[]; code: number; logged: RegExp }[] = [
  { name: 'a 4-byte unmasked frame', bytes: [frame({ opcode: 1, payload: text('hi'), mask: false })], code: 1002, logged: /MASK must be set/ },
  { name: 'a header announcing 1 GiB', bytes: [frame({ opcode: 1, announce: 1n << 30n })], code: 1009, logged: /Max payload size exceeded/ },
  { name: 'a length over 2^53 - 1', bytes: [frame({ opcode: 2, announce: 1n << 62n })], code: 1009, logged: /payload length > 2\^53 - 1/ },
  { name: 'RSV1 set (no extension was negotiated)', bytes: [frame({ opcode: 1, rsv: 4, payload: chat })], code: 1002, logged: /RSV1 must be clear/ },
  { name: 'RSV2 and RSV3 set', bytes: [frame({ opcode: 1, rsv: 3, payload: chat })], code: 1002, logged: /RSV2 and RSV3 must be clear/ },
  { name: 'unknown data opcode 3', bytes: [frame({ opcode: 3, payload: chat })], code: 1002, logged: /Invalid opcode 3/i },
  { name: 'unknown control opcode 0xB', bytes: [frame({ opcode: 0xb })], code: 1002, logged: /Invalid opcode 11/i },
  { name: 'a continuation frame with nothing to continue', bytes: [frame({ opcode: 0, payload: chat })], code: 1002, logged: /Invalid opcode 0/i },
  {
    name: 'a new text frame inside a fragmented message',
    bytes: [frame({ opcode: 1, fin: false, payload: text('{"messa') }), frame({ opcode: 1, payload: chat })],
    code: 1002,
    logged: /Invalid opcode 1/i,
  },
  { name: 'a fragmented ping', bytes: [frame({ opcode: 9, fin: false, payload: text('p') })], code: 1002, logged: /FIN must be set/ },
  { name: 'a ping of 126 bytes', bytes: [frame({ opcode: 9, payload: Buffer.alloc(126, 0x70) })], code: 1002, logged: /Invalid payload length 126/i },
  { name: 'a close frame of 200 bytes', bytes: [frame({ opcode: 8, payload: Buffer.alloc(200, 0x41) })], code: 1002, logged: /Invalid payload length 126/i },
  { name: 'a close frame with a 1-byte payload', bytes: [frame({ opcode: 8, payload: Buffer.from([3]) })], code: 1002, logged: /Invalid payload length 1/i },
  { name: 'a close frame with code 999', bytes: [frame({ opcode: 8, payload: Buffer.from([0x03, 0xe7]) })], code: 1002, logged: /Invalid WebSocket frame: invalid status code 999/ },
  { name: 'a text frame that is not UTF-8', bytes: [frame({ opcode: 1, payload: Buffer.from([0x7b, 0xc3, 0x28, 0x7d]) })], code: 1007, logged: /Invalid WebSocket frame: invalid UTF-8 sequence/ },
];

describe('malformed WebSocket frames against deskrelay serve', () => {
  for (const c of CASES) {
    it(`${c.name}: that socket closes with ${c.code}, one log line, /v1/health answers`, async () => {
      const logsBefore = stderr.length;
      const closed = await afterHandshake(c.bytes);
      expect(closed.code).toBe(c.code);
      await relayStillServes();
      await expect.poll(() => stderr.slice(logsBefore), { timeout: 2_000 }).toMatch(c.logged);
      const lines = stderr
        .slice(logsBefore)
        .split('\n')
        .filter((l) => l.includes('websocket') && c.logged.test(l));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`closed with ${c.code}`));
      expect(lines[0]).not.toContain(token);
    });
  }

  it("a real client's message over maxPayload (8 photos as JSON, about 11 MiB): close 1009, and the relay keeps serving chats", async () => {
    const photo = randomBytes(1024 * 1024 + 400_000).toString('base64');
    const big = JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, ...Array.from({ length: 8 }, () => ({ type: 'image', mediaType: 'image/png', data: photo }))] }] });
    expect(big.length).toBeGreaterThan(10 * 1024 * 1024);
    const code = await new Promise<number>((done, fail) => {
      const ws = new WebSocket(`${url.replace('http:', 'ws:')}/v1/chat/ws`, { headers: { Authorization: `Bearer ${token}` } });
      ws.on('open', () => ws.send(big));
      ws.on('error', () => {});
      ws.on('close', (c) => done(c));
      ws.on('unexpected-response', () => fail(new Error('handshake refused')));
    });
    expect(code).toBe(1009);
    await relayStillServes();
    // A chat on a new socket still runs end to end.
    const events = await new Promise<{ type: string }[]>((done) => {
      const got: { type: string }[] = [];
      const ws = new WebSocket(`${url.replace('http:', 'ws:')}/v1/chat/ws`, { headers: { Authorization: `Bearer ${token}` } });
      ws.on('open', () => ws.send(chat.toString('utf8')));
      ws.on('message', (d) => got.push(JSON.parse(String(d)) as { type: string }));
      ws.on('close', () => done(got));
    });
    expect(events.at(-1)).toMatchObject({ type: 'done' });
  }, 30_000);

  it('generated frames (any header bits, masked or not, lengths from 0 to 2^63, random payloads, several per socket): the relay never stops, /v1/health answers after every batch', async () => {
    const frameArb = fc.record({
      fin: fc.boolean(),
      rsv: fc.integer({ min: 0, max: 7 }),
      opcode: fc.integer({ min: 0, max: 15 }),
      mask: fc.boolean(),
      payload: fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
      announce: fc.option(fc.oneof(fc.bigInt({ min: 0n, max: 70_000n }), fc.bigInt({ min: 1n << 20n, max: (1n << 64n) - 1n })), { nil: undefined }),
    });
    const sequenceArb = fc.oneof(
      { weight: 4, arbitrary: fc.array(frameArb, { minLength: 1, maxLength: 4 }).map((frames) => frames.map((f) => frame(f))) },
      { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((a) => [Buffer.from(a)]) },
    );
    const batches = fc.sample(fc.array(sequenceArb, { minLength: 8, maxLength: 8 }), { numRuns: 20, seed: 2_111_27 });
    let closedByRelay = 0;
    for (const batch of batches) {
      const results = await Promise.all(batch.map((bytes) => afterHandshake(bytes, 500)));
      closedByRelay += results.filter((r) => r.code !== undefined).length;
      await relayStillServes();
    }
    // Most generated sequences are protocol errors the relay closes on with a code.
    expect(closedByRelay).toBeGreaterThan(80);
  }, 120_000);

  it('eight of them at once on parallel sockets (the concurrency limit): every socket is closed, the relay serves on', async () => {
    const some = CASES.slice(0, 8);
    const results = await Promise.all(some.map((c) => afterHandshake(c.bytes)));
    expect(results.map((r) => r.code)).toEqual(some.map((c) => c.code));
    await relayStillServes();
  }, 30_000);
});
