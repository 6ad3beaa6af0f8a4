/** The WebSocket fallback: GET /v1/chat/ws carries the same request and the same events (issue 6, part 4). */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { OLLAMA_DEFAULT_REPLY, type OllamaStandIn } from '../../fixtures/providers/ollama';
import { bearer, chatBody, chatHeaders, parseEvents, send } from '../../helpers/http';
import { startRelay, type TestRelay } from '../../helpers/relay';
import { relayWithOllama, useOllama, withOneSlot } from '../helpers';

let t: TestRelay;
let ollama: OllamaStandIn;
relayWithOllama({ keepAliveMs: 100, providerIdleMs: 3_000 }, (s) => ({ t, ollama } = s));

const chatCalls = () => ollama.requests.filter((r) => r.path === '/api/chat').length;
const wsUrl = (relay: TestRelay) => `${relay.url.replace('http:', 'ws:')}/v1/chat/ws`;

interface SocketChat {
  events: any[];
  code: number;
  reason: string;
  protocol: string;
  /** The 101's Sec-WebSocket-Protocol header as sent. */
  echoedProtocol: string | undefined;
}

/** Opens, sends `first` (unless undefined), collects every message until the server closes. */
function chatOverSocket(
  relay: TestRelay,
  opts: { headers?: Record<string, string>; protocols?: string[]; first?: string; leaveAfter?: number } = {},
): Promise<SocketChat> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(relay), opts.protocols ?? [], { headers: opts.headers ?? bearer(relay.token) });
    const events: any[] = [];
    let echoedProtocol: string | undefined;
    ws.on('upgrade', (res: IncomingMessage) => (echoedProtocol = res.headers['sec-websocket-protocol'] as string | undefined));
    ws.on('open', () => {
      if (opts.first !== undefined) ws.send(opts.first);
    });
    ws.on('message', (data) => {
      events.push(JSON.parse(String(data)));
      if (opts.leaveAfter !== undefined && events.length >= opts.leaveAfter) ws.terminate();
    });
    ws.on('close', (code, reason) => resolve({ events, code, reason: String(reason), protocol: ws.protocol, echoedProtocol }));
    ws.on('unexpected-response', (_req, res) => reject(Object.assign(new Error(`unexpected ${res.statusCode}`), { res })));
    ws.on('error', reject);
  });
}

/** A refused handshake: its status, headers and CONTRACT body. */
function refusedHandshake(relay: TestRelay, opts: { headers?: Record<string, string>; protocols?: string[] }): Promise<{ status: number; headers: IncomingMessage['headers']; json: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(relay), opts.protocols ?? [], { headers: opts.headers ?? {} });
    ws.on('open', () => reject(new Error('the handshake was accepted')));
    ws.on('error', () => {});
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: JSON.parse(body) }));
    });
  });
}

describe('a chat over the socket', () => {
  it.each(['normal', 'thinking'] as const)('sends the same events as the SSE route (%s), then closes 1000', async (mode) => {
    ollama.set({ mode });
    const sse = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody() });
    const socket = await chatOverSocket(t, { first: chatBody() });
    expect(socket.events).toEqual(parseEvents(sse.body));
    expect(socket.events.at(-1).type).toBe('done');
    expect(socket.code).toBe(1000);
  });

  it('authenticates browsers by subprotocol, selecting deskrelay and never echoing the token', async () => {
    const socket = await chatOverSocket(t, { headers: {}, protocols: ['deskrelay', `deskrelay.bearer.${t.token}`], first: chatBody() });
    expect(socket.protocol).toBe('deskrelay');
    expect(socket.echoedProtocol).toBe('deskrelay');
    expect(socket.events).toEqual([
      ...OLLAMA_DEFAULT_REPLY.map((delta) => ({ type: 'token', delta })),
      { type: 'done', content: OLLAMA_DEFAULT_REPLY.join('') },
    ]);
  });

  it('a client that leaves aborts the provider request at once', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 50 }, (_, i) => `t${i} `), chunkDelayMs: 100 });
    await chatOverSocket(t, { first: chatBody(), leaveAfter: 1 });
    const left = Date.now();
    await ollama.lastRequestClosed;
    expect(ollama.lastRequestAborted).toBe(true);
    expect(Date.now() - left).toBeLessThan(1_000);
  });

  it('stop() ends the socket with a terminal error event', async () => {
    const own = await startRelay();
    useOllama(own, ollama);
    ollama.set({ mode: 'normal', reply: Array.from({ length: 50 }, (_, i) => `s${i} `), chunkDelayMs: 100 });
    // The stand-in is shared by the file's tests: wait for this chat's own provider request (the
    // slot is taken at the handshake, before the request arrives, so activeStreams alone is early).
    const asked = ollama.requests.length;
    const chat = chatOverSocket(own, { first: chatBody() });
    await expect.poll(() => ollama.requests.length > asked && own.relay.activeStreams === 1).toBe(true);
    await own.close();
    const result = await chat;
    expect(result.events.at(-1)).toEqual({ type: 'error', message: expect.stringContaining('stopping') });
    expect(result.code).toBe(1000);
  });
});

describe('refusals', () => {
  it('a wrong token is 401 at the handshake with the CONTRACT body, and no provider is asked', async () => {
    const before = ollama.requests.length;
    const byHeader = await refusedHandshake(t, { headers: bearer('dr_wrong') });
    expect(byHeader.status).toBe(401);
    expect(byHeader.json.error.code).toBe('auth.invalid_token');
    expect(byHeader.json.error.request_id).toBe(byHeader.headers['x-request-id']);
    expect(byHeader.headers['www-authenticate']).toBe('Bearer realm="deskrelay"');
    const byProtocol = await refusedHandshake(t, { protocols: ['deskrelay', 'deskrelay.bearer.dr_wrong'] });
    expect(byProtocol.status).toBe(401);
    expect(byProtocol.json.error.code).toBe('auth.invalid_token');
    const missing = await refusedHandshake(t, {});
    expect(missing.json.error.code).toBe('auth.missing_token');
    expect(JSON.stringify([byHeader, byProtocol, missing])).not.toContain(t.token);
    expect(ollama.requests.length).toBe(before);
  });

  it('a bearer subprotocol without "deskrelay" is 400 naming the header', async () => {
    const reply = await refusedHandshake(t, { protocols: [`deskrelay.bearer.${t.token}`] });
    expect(reply.status).toBe(400);
    expect(reply.json.error.message).toContain('Sec-WebSocket-Protocol');
  });

  it('an invalid first message gets an error event, then close 1008 with the CONTRACT code', async () => {
    const before = chatCalls();
    const badBody = await chatOverSocket(t, { first: JSON.stringify({ messages: [{ role: 'robot', content: 'x' }] }) });
    expect(badBody.events).toEqual([{ type: 'error', message: expect.stringContaining('messages[0].role') }]);
    expect(badBody.code).toBe(1008);
    expect(badBody.reason).toBe('request.invalid_body');
    const notJson = await chatOverSocket(t, { first: '{nope' });
    expect(notJson.reason).toBe('request.invalid_json');
    expect(chatCalls()).toBe(before);
  });

  it('no active provider: an error event telling the user to switch, then close 1008', async () => {
    t.setActive({ ok: false, reason: 'cloud', id: 'deskrelay-cloud' });
    const result = await chatOverSocket(t, { first: chatBody() });
    expect(result.events).toEqual([{ type: 'error', message: expect.stringContaining('Switch to a local provider') }]);
    expect(result.reason).toBe('chat.no_provider');
  });

  it('the concurrency limit applies at the handshake (429)', async () => {
    await withOneSlot(ollama, Array.from({ length: 20 }, (_, i) => `c${i} `), 50, async (one) => {
      const first = chatOverSocket(one, { first: chatBody() });
      await expect.poll(() => one.relay.activeStreams).toBe(1);
      const second = await refusedHandshake(one, { headers: bearer(one.token) });
      expect(second.status).toBe(429);
      expect(second.json.error.code).toBe('chat.too_many_streams');
      expect((await first).events.at(-1).type).toBe('done');
    });
  });

  it('a malformed handshake is 400 with the CONTRACT body and frees its slot', async () => {
    const reply = await send(t.url, '/v1/chat/ws', { headers: { ...bearer(t.token), Connection: 'Upgrade', Upgrade: 'websocket' } });
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('request.invalid_header');
    expect(reply.json.error.message).toContain('Sec-WebSocket-Key');
    expect(reply.json.error.request_id).toBe(reply.headers['x-request-id']);
  });

  it('a plain GET is 426, another method 405, and no token 401', async () => {
    const plain = await send(t.url, '/v1/chat/ws', { headers: bearer(t.token) });
    expect(plain.status).toBe(426);
    expect(plain.json.error.code).toBe('request.upgrade_required');
    const post = await send(t.url, '/v1/chat/ws', { method: 'POST', headers: bearer(t.token) });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET');
    const anonymous = await send(t.url, '/v1/chat/ws');
    expect(anonymous.status).toBe(401);
  });
});

describe('other upgrade requests keep their HTTP answers', () => {
  it('POST /v1/chat/stream with Upgrade: h2c still streams SPEC events', async () => {
    const reply = await send(t.url, '/v1/chat/stream', {
      method: 'POST',
      headers: { ...chatHeaders(t.token), Connection: 'Upgrade, HTTP2-Settings', Upgrade: 'h2c', 'HTTP2-Settings': 'AAMAAABkAARAAAAAAAIAAAAA' },
      body: chatBody(),
    });
    expect(reply.status).toBe(200);
    expect(parseEvents(reply.body).at(-1)).toEqual({ type: 'done', content: OLLAMA_DEFAULT_REPLY.join('') });
  });

  it('a websocket upgrade elsewhere gets the route\'s normal answer', async () => {
    const info = await send(t.url, '/v1/remote/info', {
      headers: { ...bearer(t.token), Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13' },
    });
    expect(info.status).toBe(200);
    expect(info.json.service).toBe('deskrelay');
    const missing = await send(t.url, '/v1/nope', { headers: { Connection: 'Upgrade', Upgrade: 'websocket' } });
    expect(missing.status).toBe(404);
  });
});
