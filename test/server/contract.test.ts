/** CONTRACT §3: every error row, the order of checks, and what every response carries. */
import type { OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, chatBody, chatHeaders, send, type Reply } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';

let t: TestRelay;
let ollama: OllamaStandIn;

beforeAll(async () => {
  ollama = await startOllamaStandIn();
  t = await startRelay();
  t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
});
afterAll(async () => {
  await t.close();
  await ollama.close();
});

function expectError(reply: Reply, status: number, code: string) {
  expect(reply.status).toBe(status);
  expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(Object.keys(reply.json)).toEqual(['error']);
  expect(Object.keys(reply.json.error)).toEqual(['code', 'message', 'request_id']);
  expect(reply.json.error.code).toBe(code);
  expect(typeof reply.json.error.message).toBe('string');
  expect(reply.json.error.message.length).toBeGreaterThan(10);
  expect(reply.json.error.request_id).toMatch(/^[0-9a-f]{32}$/);
  expect(reply.headers['x-request-id']).toBe(reply.json.error.request_id);
  // No response leaks the token, a stack trace or a file path.
  expect(reply.body).not.toContain(t.token);
  expect(reply.body).not.toMatch(/\bat .*\.(ts|js):\d+|\/tmp\/|node_modules/);
}

const chat = (headers: OutgoingHttpHeaders, body: string | Buffer = chatBody()) =>
  send(t.url, '/v1/chat/stream', { method: 'POST', headers, body });

describe('401 auth', () => {
  it.each([
    ['GET', '/v1/remote/info'],
    ['POST', '/v1/chat/stream'],
  ])('%s %s without Authorization is auth.missing_token with WWW-Authenticate', async (method, path) => {
    const reply = await send(t.url, path, { method, body: method === 'POST' ? chatBody() : undefined, headers: { 'Content-Type': 'application/json' } });
    expectError(reply, 401, 'auth.missing_token');
    expect(reply.headers['www-authenticate']).toBe('Bearer realm="deskrelay"');
  });

  it.each([
    ['an empty header', ''],
    ['a wrong token', 'Bearer dr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['a bare token', 'TOKEN'],
    ['a token with a prefix of the real one', 'Bearer PREFIX'],
  ])('%s is auth.invalid_token on both endpoints', async (_name, value) => {
    const header = value.replace('TOKEN', t.token).replace('PREFIX', t.token.slice(0, 20));
    expectError(await send(t.url, '/v1/remote/info', { headers: { Authorization: header } }), 401, 'auth.invalid_token');
    const reply = await chat({ Authorization: header, 'Content-Type': 'application/json' });
    expectError(reply, 401, 'auth.invalid_token');
    expect(reply.headers['www-authenticate']).toBe('Bearer realm="deskrelay"');
  });

  it('accepts the scheme in any case', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const reply = await send(t.url, '/v1/remote/info', { headers: { Authorization: `${scheme} ${t.token}` } });
      expect(reply.status).toBe(200);
    }
  });

  it('refuses a request carrying two Authorization headers, even if one is right, whatever their case', async () => {
    for (const second of ['Authorization', 'AUTHORIZATION', 'authorization']) {
      const reply = await send(t.url, '/v1/remote/info', {
        headers: [
          ['Host', '127.0.0.1'],
          ['Authorization', `Bearer ${t.token}`],
          [second, 'Bearer dr_wrong'],
        ],
      });
      expectError(reply, 401, 'auth.invalid_token');
    }
    // One header in any case is the one header it is.
    const upper = await send(t.url, '/v1/remote/info', { headers: [['Host', '127.0.0.1'], ['AUTHORIZATION', `Bearer ${t.token}`]] });
    expect(upper.status).toBe(200);
  });
});

describe('404 and 405', () => {
  it.each(['/v1', '/v1/remote', '/v1//remote/info', '/v1/remote/info/../health', '/V1/HEALTH', '/v1/health/', '/v2/health', '/v1/chat/stream/x'])(
    '%s is route.not_found',
    async (path) => {
      expectError(await send(t.url, path, { headers: bearer(t.token) }), 404, 'route.not_found');
    },
  );

  it('the 404 message points at the interface reference rather than listing a few routes', async () => {
    const reply = await send(t.url, '/v1/nope', { headers: bearer(t.token) });
    expect(reply.json.error.message).toBe(
      'No such endpoint. Every endpoint DeskRelay serves is listed in its interface reference: https://github.com/deskrelay/deskrelay/tree/main/docs',
    );
  });

  it('ignores query strings when matching', async () => {
    const reply = await send(t.url, '/v1/remote/info?x=1&token=abc', { headers: bearer(t.token) });
    expect(reply.status).toBe(200);
  });

  it.each([
    ['POST', '/v1/health', 'GET'],
    ['OPTIONS', '/v1/remote/info', 'GET'],
    ['PUT', '/v1/remote/info', 'GET'],
    ['DELETE', '/v1/remote/info', 'GET'],
    ['GET', '/v1/chat/stream', 'POST'],
    ['HEAD', '/v1/chat/stream', 'POST'],
    ['OPTIONS', '/v1/chat/stream', 'POST'],
  ])('%s %s is route.method_not_allowed with Allow: %s', async (method, path, allow) => {
    const reply = await send(t.url, path, { method, headers: bearer(t.token) });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe(allow);
    if (method !== 'HEAD') expectError(reply, 405, 'route.method_not_allowed');
  });

  it('sends no CORS headers, even to a preflight', async () => {
    const reply = await send(t.url, '/v1/chat/stream', {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(Object.keys(reply.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });
});

describe('request body checks on POST /v1/chat/stream', () => {
  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp'])(
    'Content-Type %s is request.unsupported_media_type',
    async (type) => {
      expectError(await chat({ ...bearer(t.token), 'Content-Type': type }), 415, 'request.unsupported_media_type');
    },
  );

  it('accepts application/json with parameters, in any case, and no Content-Type at all', async () => {
    for (const type of ['application/json; charset=utf-8', 'Application/JSON', undefined]) {
      const headers: OutgoingHttpHeaders = bearer(t.token);
      if (type) headers['Content-Type'] = type;
      const reply = await chat(headers);
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    }
  });

  // A request carrying images may be up to 10 MiB (issue 13), so only a length past that is
  // refused before a byte is read; a text-only body past 1 MiB is refused once its first MiB
  // arrived (test/doors/photos/photos.test.ts).
  it('answers 413 to an announced body past 10 MiB at once, without reading it, and closes the connection', async () => {
    const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /v1/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024 + 1}\r\n\r\n{"messages":`,
    );
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (answer += d));
    // The rest of the body is never sent: the answer must come anyway, and the server must close.
    await new Promise<void>((resolve) => socket.once('end', () => resolve()));
    socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer).toContain('"code":"request.body_too_large"');
  });

  it('answers 413 to a chunked body once it passes 1 MiB', async () => {
    const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024 + 10) }] });
    const reply = await chat({ ...bearer(t.token), 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, big).catch(
      (err: NodeJS.ErrnoException) => ({ status: 0, code: err.code }) as never,
    );
    // Either the client read the 413, or the server closed while the client still wrote; never a 200.
    if (reply.status !== 0) expectError(reply, 413, 'request.body_too_large');
  });

  it('accepts a body of just under 1 MiB', async () => {
    const content = 'y'.repeat(1024 * 1024 - 100);
    const reply = await chat(chatHeaders(t.token), JSON.stringify({ messages: [{ role: 'user', content }] }));
    expect(reply.status).toBe(200);
  });

  it.each([
    ['an empty body', ''],
    ['whitespace', '  \n '],
    ['broken JSON', '{"messages": ['],
    ['not UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ])('%s is request.invalid_json', async (_name, body) => {
    expectError(await chat(chatHeaders(t.token), body), 400, 'request.invalid_json');
  });

  it.each([
    ['[]', 'JSON object'],
    ['"hi"', 'JSON object'],
    ['null', 'JSON object'],
    ['{}', 'messages is required'],
    ['{"messages":{}}', 'messages must be an array'],
    ['{"messages":[]}', 'at least one message'],
    ['{"messages":["hi"]}', 'messages[0] must be an object'],
    ['{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"tool","content":"c"}]}', 'messages[2].role must be one of system, user, assistant'],
    ['{"messages":[{"content":"c"}]}', 'messages[0].role must be one of system, user, assistant'],
    ['{"messages":[{"role":"user"}]}', 'messages[0].content must be a string'],
    ['{"messages":[{"role":"user","content":["x"]}]}', 'messages[0].content must be a string'],
    ['{"messages":[{"role":"user","content":null}]}', 'messages[0].content must be a string'],
  ])('%s is request.invalid_body naming the first bad field', async (body, expected) => {
    const reply = await chat(chatHeaders(t.token), body);
    expectError(reply, 400, 'request.invalid_body');
    expect(reply.json.error.message).toContain(expected);
  });

  it('accepts 1000 messages and refuses 1001', async () => {
    const many = (n: number) => JSON.stringify({ messages: Array.from({ length: n }, () => ({ role: 'user', content: 'x' })) });
    expect((await chat(chatHeaders(t.token), many(1000))).status).toBe(200);
    const reply = await chat(chatHeaders(t.token), many(1001));
    expectError(reply, 400, 'request.invalid_body');
    expect(reply.json.error.message).toContain('at most 1000');
  });

  it('accepts empty content and ignores unknown fields, including provider settings', async () => {
    const body = JSON.stringify({
      messages: [{ role: 'system', content: '', name: 'x' }, { role: 'user', content: 'Hi' }],
      provider: { kind: 'anthropic', apiKey: 'sk-stolen' },
      model: 'other',
    });
    const before = ollama.requests.length;
    expect((await chat(chatHeaders(t.token), body)).status).toBe(200);
    const received = ollama.requests[before].body;
    expect(received.messages).toEqual([
      { role: 'system', content: '' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(received.model).toBe('llama3.2');
  });
});

describe('check order: route → auth → media type → size → JSON → body → provider', () => {
  it('checks auth before anything that reads the body', async () => {
    expectError(await chat({ 'Content-Type': 'text/plain' }, 'not json'), 401, 'auth.missing_token');
    expectError(await chat({ Authorization: 'Bearer nope', 'Content-Type': 'application/json' }, '{'), 401, 'auth.invalid_token');
    expectError(await chat({ 'Content-Length': String(5 * 1024 * 1024) }, ''), 401, 'auth.missing_token');
  });
  it('checks the route before auth', async () => {
    expectError(await send(t.url, '/v1/chat/stream', { method: 'GET' }), 405, 'route.method_not_allowed');
    expectError(await send(t.url, '/nope', { method: 'POST' }), 404, 'route.not_found');
  });
  it('checks the media type before the size, the size before JSON, JSON before the body', async () => {
    expectError(await chat({ ...bearer(t.token), 'Content-Type': 'text/plain' }, 'x'.repeat(1024 * 1024 + 1)), 415, 'request.unsupported_media_type');
    expectError(await chat(chatHeaders(t.token), '{' + ' '.repeat(1024 * 1024 + 1)), 413, 'request.body_too_large');
    expectError(await chat(chatHeaders(t.token), '{"messages": nope}'), 400, 'request.invalid_json');
  });
  it('checks the body before the provider', async () => {
    t.setActive({ ok: false, reason: 'none' });
    try {
      expectError(await chat(chatHeaders(t.token), '{}'), 400, 'request.invalid_body');
      expectError(await chat(chatHeaders(t.token)), 412, 'chat.no_provider');
    } finally {
      t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
    }
  });
});

describe('412 chat.no_provider', () => {
  it.each([
    [{ ok: false, reason: 'none' } as const, 'No provider is active'],
    [{ ok: false, reason: 'missing', id: 'gone' } as const, '"gone" is not configured'],
    [{ ok: false, reason: 'cloud', id: 'deskrelay-cloud' } as const, 'cloud provider'],
  ])('%o: tells the user to switch to a local provider', async (active, why) => {
    t.setActive(active);
    try {
      const reply = await chat(chatHeaders(t.token));
      expectError(reply, 412, 'chat.no_provider');
      expect(reply.json.error.message).toContain(why);
      expect(reply.json.error.message).toMatch(/switch to a local provider/i);
      const info = await send(t.url, '/v1/remote/info', { headers: bearer(t.token) });
      expect(info.json.providerConfigured).toBe(false);
    } finally {
      t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
    }
  });
});

describe('429 chat.too_many_streams', () => {
  it('refuses the stream past the limit with Retry-After: 1, and frees the slot when a stream ends', async () => {
    const limited = await startRelay({ maxConcurrentStreams: () => 2 });
    const slow = await startOllamaStandIn({ mode: 'hang-after-headers' });
    limited.useProvider({ id: 'local', kind: 'ollama', baseUrl: slow.url, model: 'm' });
    try {
      const open = [0, 1].map(() => {
        let abort!: () => void;
        const gate = new Promise<void>((r) => (abort = r));
        const reply = send(limited.url, '/v1/chat/stream', {
          method: 'POST',
          headers: chatHeaders(limited.token),
          body: chatBody(),
          abortWhen: () => false,
        });
        return { reply, gate, abort };
      });
      await expect.poll(() => limited.relay.activeStreams).toBe(2);
      const third = await send(limited.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(limited.token), body: chatBody() });
      expect(third.status).toBe(429);
      expect(third.headers['retry-after']).toBe('1');
      expect(third.json.error.code).toBe('chat.too_many_streams');
      // Stop the stand-in: both streams end with an error event and give their slots back.
      await slow.close();
      const ended = await Promise.all(open.map((o) => o.reply));
      for (const r of ended) expect(r.body).toMatch(/"type":"error"/);
      await expect.poll(() => limited.relay.activeStreams).toBe(0);
      expect((await send(limited.url, '/v1/remote/info', { headers: bearer(limited.token) })).status).toBe(200);
    } finally {
      await limited.close();
      await slow.close();
    }
  });
});

describe('503 server.stopping', () => {
  it('answers requests that arrive while the relay is shutting down', async () => {
    const s = await startRelay();
    const slow = await startOllamaStandIn({ mode: 'hang-after-headers' });
    s.useProvider({ id: 'local', kind: 'ollama', baseUrl: slow.url, model: 'm' });
    try {
      const stream = send(s.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(s.token), body: chatBody() });
      await expect.poll(() => s.relay.activeStreams).toBe(1);
      // Keep one connection ready before the stop, so a request can still arrive during it.
      const token = s.token;
      const stopping = s.relay.stop();
      const during = await send(s.url, '/v1/remote/info', { headers: bearer(token) }).catch(() => undefined);
      if (during) expectError(during, 503, 'server.stopping');
      await stopping;
      const ended = await stream;
      expect(ended.body).toContain('"type":"error"');
    } finally {
      await s.close();
      await slow.close();
    }
  });
});

describe('every response', () => {
  it('carries a fresh 32-hex X-Request-Id', async () => {
    const replies = await Promise.all([
      send(t.url, '/v1/health'),
      send(t.url, '/v1/remote/info', { headers: bearer(t.token) }),
      send(t.url, '/v1/remote/info'),
      send(t.url, '/nope'),
      chat(chatHeaders(t.token)),
    ]);
    const ids = replies.map((r) => r.headers['x-request-id']);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
