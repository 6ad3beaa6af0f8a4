/**
 * The admission funnel (issue 10) and the HTTP front's hardening (issue 18: finding 7 and the
 * defence-in-depth list), through real HTTP on loopback. Raw sockets where a client library would
 * hide what is under test (pipelining, Expect, Host, absolute-form targets, slow bodies).
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startRelay, type TestRelay } from '../helpers/relay';
import { send } from '../helpers/http';

let relays: TestRelay[] = [];
async function relay(overrides: Parameters<typeof startRelay>[0] = {}): Promise<TestRelay> {
  const t = await startRelay(overrides);
  relays.push(t);
  return t;
}
afterEach(async () => {
  await Promise.all(relays.map((t) => t.close()));
  relays = [];
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const portOf = (t: TestRelay) => Number(new URL(t.url).port);

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Everything the socket received. */
  text: string;
  /** The server closed (or ended) the connection before `waitMs` ran out. */
  closed: boolean;
}

function parse(text: string): Omit<RawAnswer, 'text' | 'closed'> {
  const split = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  const length = Number(headers['content-length'] ?? NaN);
  const rest = text.slice(split + 4);
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body: Number.isFinite(length) ? rest.slice(0, length) : rest };
}

/** Opens a connection, lets `drive` write on it, and collects what comes back until the server closes it or `waitMs` passes. */
async function raw(port: number, drive: (socket: Socket) => void | Promise<void>, waitMs = 2_000): Promise<RawAnswer> {
  const socket = connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  let text = '';
  let closed = false;
  socket.setEncoding('latin1').on('data', (d: string) => (text += d));
  socket.on('error', () => {});
  const ended = new Promise<void>((r) => socket.once('close', () => ((closed = true), r())));
  await drive(socket);
  await Promise.race([ended, sleep(waitMs)]);
  socket.destroy();
  return { ...parse(text), text, closed };
}

function head(method: string, path: string, headers: Record<string, string | number>, host = '127.0.0.1'): string {
  return `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${Object.entries(headers)
    .map(([n, v]) => `${n}: ${v}\r\n`)
    .join('')}\r\n`;
}

function expectContractError(a: { status: number; headers: Record<string, string | string[] | undefined>; body: string }, status: number, code: string): void {
  expect(a.status).toBe(status);
  expect(a.headers['content-type']).toBe('application/json; charset=utf-8');
  const id = a.headers['x-request-id'];
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  expect(JSON.parse(a.body)).toEqual({ error: { code, message: expect.any(String), request_id: id } });
}

function expectOpenAiError(a: Pick<RawAnswer, 'status' | 'headers' | 'body'>, status: number, code: string, type: string): void {
  expect(a.status).toBe(status);
  expect(a.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(a.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/);
  expect(JSON.parse(a.body)).toEqual({ error: { message: expect.any(String), type, param: null, code } });
}

const chatBody = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] });
const completionBody = JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
const wsHandshake = { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': 13, 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' };

/** Every door, as a raw request: SPEC's stream, resumable streams, cancel, the OpenAI door, the WebSocket. */
const DOORS = [
  { door: 'SPEC stream', method: 'POST', path: '/v1/chat/stream', headers: { 'Content-Type': 'application/json' }, body: chatBody, dialect: 'contract' },
  { door: 'resumable stream', method: 'POST', path: '/v1/chat/stream', headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'funnel-1' }, body: chatBody, dialect: 'contract' },
  { door: 'cancel', method: 'POST', path: '/v1/chat/cancel', headers: { 'Idempotency-Key': 'funnel-1' }, body: '', dialect: 'contract' },
  { door: 'OpenAI completions', method: 'POST', path: '/v1/chat/completions', headers: { 'Content-Type': 'application/json' }, body: completionBody, dialect: 'openai' },
  { door: 'OpenAI models', method: 'GET', path: '/v1/models', headers: {}, body: '', dialect: 'openai' },
  { door: 'WebSocket', method: 'GET', path: '/v1/chat/ws', headers: wsHandshake, body: '', dialect: 'handshake' },
] as const;

function requestOf(d: (typeof DOORS)[number], token: string | undefined): { head: string; body: string } {
  const headers: Record<string, string | number> = { ...d.headers };
  if (token !== undefined) headers.Authorization = `Bearer ${token}`;
  if (d.method === 'POST') headers['Content-Length'] = Buffer.byteLength(d.body);
  return { head: head(d.method, d.path, headers), body: d.body };
}

describe('one funnel: every door refuses in its own dialect', () => {
  it.each(DOORS)('$door: a bad token is 401 ($dialect)', async (d) => {
    const t = await relay();
    const { head: h, body } = requestOf(d, 'dr_wrong');
    const a = await raw(portOf(t), (s) => void s.write(h + body));
    if (d.dialect === 'openai') expectOpenAiError(a, 401, 'invalid_api_key', 'invalid_request_error');
    else expectContractError(a, 401, 'auth.invalid_token');
    if (d.dialect === 'handshake') {
      // A refused handshake is a plain HTTP answer on the raw socket, and the socket closes.
      expect(a.headers.connection).toBe('close');
      expect(a.closed).toBe(true);
    }
    expect(a.text).not.toContain(t.token);
  });

  it.each(DOORS)('$door: a stopping relay is 503 ($dialect)', async (d) => {
    const t = await relay();
    const { head: h, body } = requestOf(d, t.token);
    let stopped: Promise<void> | undefined;
    // The request's head is held back its last line break, so it is on the wire while stop() begins.
    const a = await raw(portOf(t), async (s) => {
      s.write(h.slice(0, -2));
      await sleep(50);
      stopped = t.relay.stop();
      await sleep(20);
      s.write(`\r\n${body}`);
    });
    await stopped;
    if (d.dialect === 'openai') expectOpenAiError(a, 503, 'server_stopping', 'server_error');
    else expectContractError(a, 503, 'server.stopping');
  });
});

describe('connections without the token do not live long (issue 18, finding 7)', () => {
  it.each([
    ['401', 'POST', '/v1/chat/stream', {}, 401],
    ['404', 'POST', '/v1/nowhere', {}, 404],
    ['405', 'PUT', '/v1/health', {}, 405],
    ['415 (with the token)', 'POST', '/v1/chat/stream', { 'Content-Type': 'text/plain', auth: true }, 415],
  ] as const)('a %s answered before the body is read closes the connection instead of reading the rest', async (_n, method, path, extra, status) => {
    const t = await relay();
    const headers: Record<string, string | number> = { 'Content-Length': 1_000_000 };
    if ('Content-Type' in extra) headers['Content-Type'] = extra['Content-Type'];
    if ('auth' in extra) headers.Authorization = `Bearer ${t.token}`;
    const a = await raw(portOf(t), (s) => void s.write(`${head(method, path, headers)}{"messages":`));
    expect(a.status).toBe(status);
    expect(a.headers.connection).toBe('close');
    expect(a.closed).toBe(true);
  });

  it('Expect: 100-continue is answered only after auth: no token gets the 401 and a closed connection, never 100', async () => {
    const t = await relay();
    const h = head('POST', '/v1/chat/stream', { 'Content-Type': 'application/json', 'Content-Length': chatBody.length, Expect: '100-continue' });
    const refused = await raw(portOf(t), (s) => void s.write(h));
    expect(refused.text).not.toContain('100 Continue');
    expectContractError(refused, 401, 'auth.missing_token');
    expect(refused.closed).toBe(true);

    const withToken = head('POST', '/v1/chat/stream', { Authorization: `Bearer ${t.token}`, 'Content-Type': 'application/json', 'Content-Length': chatBody.length, Expect: '100-continue' });
    const invited = await raw(portOf(t), (s) => void s.write(withToken), 500);
    expect(invited.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
  });

  it('a body that trickles in after the answer is cut at requestTimeout', async () => {
    const t = await relay({ requestTimeoutMs: 1_000 });
    const started = Date.now();
    let drip: NodeJS.Timeout | undefined;
    const a = await raw(
      portOf(t),
      (s) => {
        s.write(head('GET', '/v1/health', { 'Content-Length': 100_000 }));
        drip = setInterval(() => s.writable && s.write('x'), 100);
      },
      8_000,
    );
    clearInterval(drip);
    expect(a.status).toBe(200);
    expect(a.closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('connections are capped (maxConnections): past the cap a new one is closed at once, and one frees a place', async () => {
    const t = await relay({ maxConnections: 3 });
    const port = portOf(t);
    const open: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => {});
      await new Promise((r) => s.once('connect', r));
      open.push(s);
    }
    await sleep(50);
    const over = await raw(port, (s) => void s.write(head('GET', '/v1/health', {})), 1_000);
    expect(over.closed).toBe(true);
    expect(over.text).toBe('');
    open.pop()!.destroy();
    await sleep(50);
    const after = await raw(port, (s) => void s.write(head('GET', '/v1/health', { Connection: 'close' })));
    expect(after.status).toBe(200);
    for (const s of open) s.destroy();
  });
});

describe('defence in depth (issue 18)', () => {
  it.each(['evil.example', 'evil.example:53210', '127.0.0.1.nip.io', 'localhost.evil.example', 'x', ''])(
    'Host %j is refused with 400 request.invalid_header, the web client and /v1/health included (DNS rebinding)',
    async (host) => {
      const t = await relay();
      for (const path of ['/', '/v1/health', '/v1/remote/info']) {
        const a = await raw(portOf(t), (s) => void s.write(head('GET', path, { Authorization: `Bearer ${t.token}` }, host)));
        expectContractError(a, 400, 'request.invalid_header');
        expect(a.closed).toBe(true);
      }
      const ws = await raw(portOf(t), (s) => void s.write(head('GET', '/v1/chat/ws', { ...wsHandshake, Authorization: `Bearer ${t.token}` }, host)));
      expectContractError(ws, 400, 'request.invalid_header');
    },
  );

  it('a second Host header, in any case, is 400 request.malformed and a closed connection', async () => {
    const t = await relay();
    for (const second of ['Host', 'HOST', 'host']) {
      const a = await raw(portOf(t), (s) => void s.write(head('GET', '/v1/health', { [second]: '127.0.0.1' })));
      expectContractError(a, 400, 'request.malformed');
      expect(a.closed).toBe(true);
    }
    // Headers whose names merely contain "host" are nothing of the kind.
    const ok = await raw(portOf(t), (s) => void s.write(head('GET', '/v1/health', { 'X-Forwarded-Host': 'evil.example', Hostx: '1', Connection: 'close' })));
    expect(ok.status).toBe(200);
  });

  it('loopback names and addresses, the bound address and announced public hostnames are served', async () => {
    const t = await relay();
    const port = portOf(t);
    for (const host of ['127.0.0.1', `127.0.0.1:${port}`, 'localhost', `LOCALHOST:${port}`, 'localhost.', 'phone.localhost', '[::1]', `[::1]:${port}`, '127.1.2.3']) {
      const a = await raw(port, (s) => void s.write(head('GET', '/v1/health', { Connection: 'close' }, host)));
      expect(a.status, host).toBe(200);
    }
    const tunnel = 'quiet-river-1234.trycloudflare.com';
    expect((await raw(port, (s) => void s.write(head('GET', '/v1/health', {}, tunnel)))).status).toBe(400);
    t.relay.setPublicHosts([`https://${tunnel}`]);
    expect(t.relay.publicHosts).toEqual([tunnel]);
    expect((await raw(port, (s) => void s.write(head('GET', '/v1/health', { Connection: 'close' }, tunnel)))).status).toBe(200);
    expect((await raw(port, (s) => void s.write(head('GET', '/', { Connection: 'close' }, `${tunnel}:443`)))).status).toBe(200);
    t.relay.setPublicHosts([]);
    expect((await raw(port, (s) => void s.write(head('GET', '/v1/health', {}, tunnel)))).status).toBe(400);
  });

  it('absolute-form targets and OPTIONS * go through the same pipeline: request id, Host (the target authority), log line', async () => {
    const t = await relay();
    const port = portOf(t);
    const ok = await raw(port, (s) => void s.write(head('GET', `http://127.0.0.1:${port}/v1/health?x=1`, { Connection: 'close' })));
    expect(ok.status).toBe(200);
    expect(ok.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.parse(ok.body)).toMatchObject({ status: 'ok' });
    const rebound = await raw(port, (s) => void s.write(head('GET', 'http://evil.example/v1/health', {})));
    expectContractError(rebound, 400, 'request.invalid_header');
    const star = await raw(port, (s) => void s.write(head('OPTIONS', '*', { Connection: 'close' })));
    expectContractError(star, 404, 'route.not_found');
    const starRebound = await raw(port, (s) => void s.write(head('OPTIONS', '*', {}, 'evil.example')));
    expectContractError(starRebound, 400, 'request.invalid_header');
    await expect.poll(() => t.logLines.filter((l) => /^request (GET \/v1\/health 200|GET \/v1\/health 400|OPTIONS \* 404|OPTIONS \* 400) /.test(l)).length).toBe(4);
  });

  it('a path parameter with a malformed percent escape matches no route: 404 with the CONTRACT body, and the relay answers after', async () => {
    const t = await relay();
    for (const path of ['/v1/providers/%E0%A4%A/models', '/v1/agent/sessions/%zz', '/v1/devices/%']) {
      const a = await send(t.url, path, { headers: { Authorization: `Bearer ${t.token}` } });
      expect(a.status, path).toBe(404);
      expect(JSON.parse(a.body).error.code, path).toBe('route.not_found');
    }
    expect((await send(t.url, '/v1/health')).status).toBe(200);
  });

  it('answers the same path by method every time, asked again and again in any order (the route lookup is kept per method and path)', async () => {
    const t = await relay();
    const auth = { Authorization: `Bearer ${t.token}` };
    for (let round = 0; round < 3; round++) {
      expect((await send(t.url, '/v1/health', { method: 'PUT' })).status).toBe(405);
      expect((await send(t.url, '/v1/health')).status).toBe(200);
      expect((await send(t.url, '/v1/health', { method: 'HEAD' })).status).toBe(200);
      expect((await send(t.url, '/v1/remote/info', { headers: auth })).status).toBe(200);
      expect((await send(t.url, '/v1/remote/info', { method: 'DELETE', headers: auth })).status).toBe(405);
      // A path with a {name} is still matched per path: another id is another answer.
      expect((await send(t.url, '/v1/devices/dev_0000000000', { method: 'DELETE', headers: auth })).status).toBe(404);
      expect((await send(t.url, '/v1/nowhere')).status).toBe(404);
    }
  });

  it('HEAD /v1/health answers like GET without a body; HEAD elsewhere under /v1 stays 405', async () => {
    const t = await relay();
    const get = await send(t.url, '/v1/health');
    const headReply = await send(t.url, '/v1/health', { method: 'HEAD' });
    expect(headReply.status).toBe(200);
    expect(headReply.body).toBe('');
    expect(headReply.headers['content-type']).toBe(get.headers['content-type']);
    expect(headReply.headers['content-length']).toBe(get.headers['content-length']);
    expect(headReply.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/);
    for (const path of ['/v1/remote/info', '/v1/chat/stream', '/v1/models']) {
      const reply = await send(t.url, path, { method: 'HEAD', headers: { Authorization: `Bearer ${t.token}` } });
      expect(reply.status, path).toBe(405);
    }
  });

  it('unauthenticated request log lines are rate-limited with a summary; authenticated ones are all written', async () => {
    const t = await relay();
    const started = Date.now();
    await Promise.all(Array.from({ length: 300 }, () => send(t.url, '/v1/remote/info')));
    const seconds = Math.ceil((Date.now() - started) / 1_000);
    const refusedLines = () => t.logLines.filter((l) => l.startsWith('request GET /v1/remote/info 401')).length;
    expect(refusedLines()).toBeLessThanOrEqual(20 * (seconds + 1));
    await expect.poll(() => t.logLines.some((l) => /^warn … \d+ unauthenticated request log lines suppressed/.test(l)), { timeout: 3_000 }).toBe(true);
    // On a loaded machine the 300 refusals span several rate windows, each summed up when it closes:
    // wait for the last window's summary rather than reading the count after the first one.
    const suppressed = () => t.logLines.filter((l) => l.includes('suppressed')).reduce((n, l) => n + Number(/… (\d+) /.exec(l)![1]), 0);
    await expect.poll(() => refusedLines() + suppressed(), { timeout: 5_000 }).toBe(300);

    for (let i = 0; i < 60; i++) await send(t.url, '/v1/remote/info', { headers: { Authorization: `Bearer ${t.token}` } });
    expect(t.logLines.filter((l) => l.startsWith('request GET /v1/remote/info 200')).length).toBe(60);
  });
});

describe('routes on polka (issue 37): path parameters, exact paths, 405', () => {
  it('a :name segment reaches the handler decoded', async () => {
    const t = await relay();
    const reply = await send(t.url, '/v1/providers/my%20box/models', { headers: { Authorization: `Bearer ${t.token}` } });
    expect(reply.status).toBe(404);
    expect(reply.json.error.code).toBe('provider.not_found');
    expect(reply.json.error.message).toContain('"my box"');
  });

  it.each(['/v1/providers/%E0%A4%A/models', '/v1/providers/%FF/models', '/v1/devices/%E0'])('a segment that is no percent-encoded text names nothing: %s is route.not_found, whatever the method', async (path) => {
    const t = await relay();
    for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
      const reply = await send(t.url, path, { method, headers: { Authorization: `Bearer ${t.token}` } });
      expectContractError(reply, 404, 'route.not_found');
    }
  });

  it.each([
    // An exact path is never a :name segment (PATCH and DELETE /v1/devices/:id exist, DELETE and PUT /v1/conversations/:id too).
    ['PATCH', '/v1/devices/codes', 'POST'],
    ['DELETE', '/v1/devices/claim', 'POST'],
    ['DELETE', '/v1/conversations/events', 'GET, POST'],
    ['PUT', '/v1/conversations/events', 'GET, POST'],
    // A path with :name segments has its 405 too.
    ['PUT', '/v1/agent/sessions/s1/events', 'GET, POST'],
    ['GET', '/v1/agent/sessions/s1/approvals/c1', 'POST'],
    ['POST', '/v1/providers/p1/models', 'GET'],
    ['GET', '/v1/devices/d1/agent', 'PUT'],
  ])('%s %s is 405 with Allow: %s', async (method, path, allow) => {
    const t = await relay();
    const reply = await send(t.url, path, { method, headers: { Authorization: `Bearer ${t.token}` } });
    expectContractError(reply, 405, 'route.method_not_allowed');
    expect(reply.headers.allow).toBe(allow);
  });
});
