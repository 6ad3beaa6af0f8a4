/**
 * Bad input gets a clear CONTRACT answer and the server keeps serving. Bodies and headers are
 * generated with fast-check rather than hand-picked, so shapes nobody thought of are tried too.
 */
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, chatHeaders, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';

let t: TestRelay;
let ollama: OllamaStandIn;

beforeAll(async () => {
  ollama = await startOllamaStandIn({ reply: ['ok'] });
  t = await startRelay({ bodyTimeoutMs: 400 });
  t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'm' });
});
afterAll(async () => {
  await t.close();
  await ollama.close();
});

const CODES: Record<number, string[]> = {
  400: ['request.invalid_json', 'request.invalid_body'],
  401: ['auth.missing_token', 'auth.invalid_token'],
  404: ['route.not_found'],
  405: ['route.method_not_allowed'],
  413: ['request.body_too_large'],
  415: ['request.unsupported_media_type'],
};

async function expectHealthy() {
  const health = await send(t.url, '/v1/health');
  expect(health.json).toMatchObject({ status: 'ok' });
}

/** A 200 must be a well-formed stream ending in exactly one terminal event; anything else a CONTRACT error. */
function expectContractAnswer(reply: Awaited<ReturnType<typeof send>>) {
  if (reply.status === 200) {
    expect(reply.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(reply.body).toMatch(/^(data: \{[^\n]*\}\n\n)*data: \{"type":"(done|error)"[^\n]*\}\n\n$/);
    return;
  }
  expect(Object.keys(CODES).map(Number)).toContain(reply.status);
  expect(CODES[reply.status]).toContain(reply.json?.error?.code);
  expect(reply.json.error.request_id).toBe(reply.headers['x-request-id']);
}

const anyJson = fc.jsonValue({ maxDepth: 4 });
const message = fc.record(
  { role: fc.oneof(fc.constantFrom('system', 'user', 'assistant'), fc.string(), fc.integer()), content: fc.oneof(fc.string(), fc.integer(), fc.constant(null), anyJson) },
  { requiredKeys: [] },
);
const chatLike = fc.oneof(
  fc.record({ messages: fc.array(message, { maxLength: 5 }) }, { requiredKeys: [] }),
  fc.record({ messages: anyJson }),
  anyJson,
);
const body = fc.oneof(
  chatLike.map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
  chatLike.map((v) => JSON.stringify(v).slice(0, -1)),
);

describe('generated bad bodies', () => {
  it('every body gets a CONTRACT code or a valid stream, and health answers after', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        expectContractAnswer(await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: b }));
      }),
      { numRuns: 300 },
    );
    await expectHealthy();
  });

  it('valid requests with generated text always stream one terminal event', async () => {
    const valid = fc.array(fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: fc.string({ unit: 'binary' }) }), { minLength: 1, maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(valid, async (messages) => {
        const reply = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: JSON.stringify({ messages }) });
        expect(reply.status).toBe(200);
        expect(reply.body).toBe('data: {"type":"token","delta":"ok"}\n\ndata: {"type":"done","content":"ok"}\n\n');
        // What the provider received is what was sent, after the round trip through JSON.
        expect(ollama.requests.at(-1)!.body.messages).toEqual(messages);
      }),
      { numRuns: 100 },
    );
  });
});

describe('generated methods, paths and headers', () => {
  it('every request gets a CONTRACT answer and health answers after', async () => {
    const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD');
    const path = fc.oneof(
      fc.constantFrom('/v1/health', '/v1/remote/info', '/v1/chat/stream', '/v1//remote/info', '/v1/remote/info/../health', '/v1/chat/stream?x=1', '/%2e%2e/v1/health'),
      fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)),
    );
    const auth = fc.oneof(fc.constant(undefined), fc.constant('GOOD'), fc.string({ maxLength: 60 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')), fc.constant('Bearer '));
    const contentType = fc.oneof(fc.constant(undefined), fc.constantFrom('application/json', 'text/plain', 'application/json; charset=latin1', ''));
    await fc.assert(
      fc.asyncProperty(method, path, auth, contentType, body, async (m, p, a, ct, b) => {
        const headers: Record<string, string> = {};
        if (a !== undefined) headers.Authorization = a === 'GOOD' ? `Bearer ${t.token}` : a;
        if (ct !== undefined) headers['Content-Type'] = ct;
        const reply = await send(t.url, p, { method: m, headers, body: m === 'GET' || m === 'HEAD' ? undefined : b });
        expect(reply.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/);
        if (m === 'HEAD') {
          // HEAD is a wrong method under /v1 but for the health probe; outside it, the web client may have the file.
          expect(p.split('?')[0] === '/v1/health' ? [200] : p.startsWith('/v1/') ? [405, 404] : [200, 404, 405]).toContain(reply.status);
          return;
        }
        // The phone web client answers GETs outside /v1 with its page and assets.
        if (reply.status === 200 && m === 'GET' && !p.startsWith('/v1/') && reply.headers['content-type']?.match(/^(text\/|application\/javascript)/)) return;
        if (reply.status === 200 && reply.headers['content-type']?.startsWith('application/json')) {
          expect(['/v1/health', '/v1/remote/info']).toContain(p.split('?')[0]);
          return;
        }
        expectContractAnswer(reply);
      }),
      { numRuns: 400 },
    );
    await expectHealthy();
  });
});

describe('requests that are not HTTP', () => {
  it.each([
    ['a body without a length (read as a second request)', 'GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n{"messages":false}', 400],
    ['a bad method token', 'G(T /v1/health HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['headers far over the limit', `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`, 431],
  ])('%s gets a CONTRACT error body, and the server keeps serving', async (_name, raw, status) => {
    const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (answer += d));
    socket.write(raw);
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const last = answer.slice(answer.lastIndexOf('HTTP/1.1 '));
    expect(last).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    const body = JSON.parse(last.slice(last.indexOf('\r\n\r\n') + 4));
    expect(body.error.code).toBe('request.malformed');
    expect(last).toContain(`X-Request-Id: ${body.error.request_id}`);
    await expectHealthy();
  });
});

describe('slow and oversized bodies', () => {
  it('times out a body that trickles in, with a CONTRACT body, and frees the connection', async () => {
    const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`POST /v1/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"mess`);
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (answer += d));
    const drip = setInterval(() => socket.write(' '), 100);
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    clearInterval(drip);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('"code":"request.timeout"');
    expect(t.relay.activeStreams).toBe(0);
    await expectHealthy();
  });

  it('refuses 2 MiB bodies over and over without running out of anything', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 0x20);
    for (let i = 0; i < 20; i++) {
      const reply = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: big }).catch(() => undefined);
      if (reply) expect(reply.json.error.code).toBe('request.body_too_large');
    }
    await expectHealthy();
    expect((await send(t.url, '/v1/remote/info', { headers: bearer(t.token) })).status).toBe(200);
  });
});
