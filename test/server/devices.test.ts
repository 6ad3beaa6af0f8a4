/**
 * Paired phones as devices (issue 26): registration, a device token at every door, revocation
 * ending live streams at once, the 401 everywhere after it, per-device stream limits, the request
 * log naming the device, and restarts with and without remembering devices.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, chatBody, chatHeaders, parseEvents, send, type Reply } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { completeBlocks, newKey, parseNumbered, resumable, relayWithOllama, useOllama } from '../doors/helpers';
import { DEVICE_REMOVED_MESSAGE } from '../../server/src/protocol';
import { devicesPath } from '../../server/src/store/devices';
import { RelayServer } from '../../server/src/session/relay';

let ollama: OllamaStandIn;
let t: TestRelay;
relayWithOllama({ keepAliveMs: 100, providerIdleMs: 5_000 }, (s) => ({ t, ollama } = s));

const json = (token: string) => ({ ...bearer(token), 'Content-Type': 'application/json' });

async function register(relay: TestRelay | { url: string; token: string }, name = 'iPhone Safari'): Promise<{ id: string; token: string }> {
  const reply = await send(relay.url, '/v1/devices', { method: 'POST', headers: json(relay.token), body: JSON.stringify({ name }) });
  expect(reply.status, reply.body).toBe(201);
  return reply.json;
}
const revoke = (relay: { url: string; token: string }, id: string, token = relay.token) => send(relay.url, `/v1/devices/${id}`, { method: 'DELETE', headers: bearer(token) });
const list = (relay: { url: string }, token: string) => send(relay.url, '/v1/devices', { headers: bearer(token) });
const wsUrl = (relay: TestRelay) => `${relay.url.replace('http:', 'ws:')}/v1/chat/ws`;

/** A socket chat: the events until the server closes, and how it closed. */
function socketChat(relay: TestRelay, token: string, opts: { viaProtocol?: boolean; first?: string; onOpen?: () => void } = {}) {
  return new Promise<{ events: any[]; code: number; reason: string }>((resolve, reject) => {
    const ws = opts.viaProtocol
      ? new WebSocket(wsUrl(relay), ['deskrelay', `deskrelay.bearer.${token}`])
      : new WebSocket(wsUrl(relay), [], { headers: bearer(token) });
    const events: any[] = [];
    ws.on('open', () => {
      if (opts.first !== undefined) ws.send(opts.first);
      opts.onOpen?.();
    });
    ws.on('message', (data) => events.push(JSON.parse(String(data))));
    ws.on('close', (code, reason) => resolve({ events, code, reason: String(reason) }));
    ws.on('unexpected-response', (_req, res: IncomingMessage) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, json: JSON.parse(body) })));
    });
    ws.on('error', () => {});
  });
}

/** One request per door, each with `token`: the status of every one. */
async function everyDoor(relay: TestRelay, token: string): Promise<Record<string, Reply | { status: number; json?: any }>> {
  const doors: Record<string, Reply | { status: number; json?: any }> = {};
  doors.info = await send(relay.url, '/v1/remote/info', { headers: bearer(token) });
  doors.sse = await send(relay.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() });
  doors.resumable = await resumable(relay.url, token, newKey());
  doors.openai = await send(relay.url, '/v1/chat/completions', { method: 'POST', headers: json(token), body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }) });
  doors.openaiModels = await send(relay.url, '/v1/models', { headers: bearer(token) });
  doors.ollama = await send(relay.url, '/ollama/api/chat', { method: 'POST', headers: json(token), body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Hi' }], stream: false }) });
  doors.providers = await send(relay.url, '/v1/providers', { headers: bearer(token) });
  doors.pushKey = await send(relay.url, '/v1/push/key', { headers: bearer(token) });
  doors.devices = await list(relay, token);
  for (const viaProtocol of [false, true]) {
    const name = viaProtocol ? 'wsProtocol' : 'wsHeader';
    try {
      const chat = await socketChat(relay, token, { viaProtocol, first: chatBody() });
      doors[name] = { status: 101, json: chat };
    } catch (err) {
      doors[name] = err as { status: number; json: any };
    }
  }
  return doors;
}

describe('registration', () => {
  it('POST /v1/devices with the pairing token answers 201 {id, token}; the token is drd_ + 43 characters and unlocks the API', async () => {
    const reply = await send(t.url, '/v1/devices', { method: 'POST', headers: json(t.token), body: JSON.stringify({ name: '  iPhone Safari ' }) });
    expect(reply.status).toBe(201);
    expect(Object.keys(reply.json).sort()).toEqual(['id', 'token']);
    expect(reply.json.id).toMatch(/^dev_[0-9a-f]{10}$/);
    expect(reply.json.token).toMatch(/^drd_[A-Za-z0-9_-]{43}$/);
    expect(reply.headers.location).toBe(`/v1/devices/${reply.json.id}`);
    expect(reply.headers['cache-control']).toBe('no-store');
    const listed = await list(t, reply.json.token);
    expect(listed.status).toBe(200);
    const me = listed.json.find((d: any) => d.id === reply.json.id);
    expect(me).toMatchObject({ id: reply.json.id, name: 'iPhone Safari', connected: true, current: true });
    expect(Date.parse(me.createdAt)).not.toBeNaN();
    expect(Date.parse(me.lastSeen)).toBeGreaterThanOrEqual(Date.parse(me.createdAt));
    // Listed with the pairing token, no device is "current"; no token or hash anywhere.
    const byDesk = await list(t, t.token);
    expect(byDesk.json.every((d: any) => d.current === false)).toBe(true);
    expect(byDesk.body).not.toContain(reply.json.token);
    expect(Object.keys(me).sort()).toEqual(['agent', 'connected', 'createdAt', 'current', 'hasKey', 'id', 'lastSeen', 'name']);
    // The host hears of it (the CLI prints a line, the extension shows a notification).
    expect(t.logLines).toContain(`info device ${reply.json.id} registered`);
    expect(t.logLines.join('\n')).not.toContain(reply.json.token);
    expect((await revoke(t, reply.json.id)).status).toBe(204);
  });

  it('refuses a missing, empty, multi-line or too long name (400 request.invalid_body)', async () => {
    for (const body of ['{}', '{"name":""}', '{"name":"   "}', '{"name":"a\\nb"}', JSON.stringify({ name: 'x'.repeat(65) }), '{"name":3}', '[]']) {
      const reply = await send(t.url, '/v1/devices', { method: 'POST', headers: json(t.token), body });
      expect(reply.status, body).toBe(400);
      expect(reply.json.error.code).toBe('request.invalid_body');
    }
  });

  it('needs the pairing token: no token is a 401, a device token is a 403 device.forbidden', async () => {
    const none = await send(t.url, '/v1/devices', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"name":"x"}' });
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('auth.missing_token');
    const device = await register(t);
    const minted = await send(t.url, '/v1/devices', { method: 'POST', headers: json(device.token), body: '{"name":"x"}' });
    expect(minted.status).toBe(403);
    expect(minted.json.error.code).toBe('device.forbidden');
    await revoke(t, device.id);
  });

  it('a device may remove itself but not another (403); an unknown id is a 404 device.not_found', async () => {
    const a = await register(t, 'A');
    const b = await register(t, 'B');
    const other = await revoke(t, b.id, a.token);
    expect(other.status).toBe(403);
    expect(other.json.error.code).toBe('device.forbidden');
    expect((await revoke(t, a.id, a.token)).status).toBe(204);
    const unknown = await revoke(t, 'dev_0000000000');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('device.not_found');
    expect((await revoke(t, b.id)).status).toBe(204);
    expect((await revoke(t, b.id)).status).toBe(404);
  });
});

describe('renaming', () => {
  const rename = (relay: { url: string }, id: string, token: string, body: unknown) =>
    send(relay.url, `/v1/devices/${id}`, { method: 'PATCH', headers: json(token), body: typeof body === 'string' ? body : JSON.stringify(body) });

  it('PATCH /v1/devices/<id> {"name"}: a device renames itself (200, the listed name changes); another device is 403, the desk may rename any', async () => {
    const a = await register(t, 'Pixel Chrome');
    const b = await register(t, 'B');
    const own = await rename(t, a.id, a.token, { name: '  Ana\'s phone ' });
    expect(own.status, own.body).toBe(200);
    expect(own.json).toMatchObject({ id: a.id, name: "Ana's phone", current: true });
    expect((await list(t, t.token)).json.find((d: any) => d.id === a.id).name).toBe("Ana's phone");
    const other = await rename(t, b.id, a.token, { name: 'mine now' });
    expect(other.status).toBe(403);
    expect(other.json.error.code).toBe('device.forbidden');
    expect((await list(t, t.token)).json.find((d: any) => d.id === b.id).name).toBe('B');
    const desk = await rename(t, b.id, t.token, { name: 'Tablet' });
    expect(desk.status).toBe(200);
    expect(desk.json).toMatchObject({ id: b.id, name: 'Tablet', current: false });
    await revoke(t, a.id);
    await revoke(t, b.id);
  });

  it('refuses a bad name (400), an unknown id (404), no token (401), and a removed device\'s token (401)', async () => {
    const a = await register(t, 'A');
    for (const body of [{}, { name: '' }, { name: 'two\nlines' }, { name: 'x'.repeat(65) }, 'not json', ['A']]) {
      const reply = await rename(t, a.id, a.token, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.json.error.code).toBe(body === 'not json' ? 'request.invalid_json' : 'request.invalid_body');
    }
    expect((await list(t, t.token)).json.find((d: any) => d.id === a.id).name).toBe('A');
    const unknown = await rename(t, 'dev_0000000000', t.token, { name: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('device.not_found');
    const anonymous = await send(t.url, `/v1/devices/${a.id}`, { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: '{"name":"x"}' });
    expect(anonymous.status).toBe(401);
    await revoke(t, a.id);
    const removed = await rename(t, a.id, a.token, { name: 'back' });
    expect(removed.status).toBe(401);
    expect(removed.body).not.toContain(a.token);
  });
});

describe('a device token at every door', () => {
  it('is accepted exactly where the pairing token is: SPEC SSE, resumable, OpenAI, Ollama, WebSocket (header and subprotocol), providers, push, devices', async () => {
    const device = await register(t);
    const withDevice = await everyDoor(t, device.token);
    const withPairing = await everyDoor(t, t.token);
    for (const [door, reply] of Object.entries(withDevice)) {
      expect(reply.status, door).toBe(withPairing[door]!.status);
      expect(reply.status, door).toBeLessThan(300);
    }
    expect(parseEvents((withDevice.sse as Reply).body).at(-1)).toEqual({ type: 'done', content: 'Hello from Ollama!' });
    expect(parseNumbered((withDevice.resumable as Reply).body).at(-1)!.event.type).toBe('done');
    expect((withDevice.wsHeader.json as any).events.at(-1).type).toBe('done');
    expect((withDevice.wsProtocol.json as any).events.at(-1).type).toBe('done');
    await revoke(t, device.id);
  });

  it('the request log names the device id and never the token', async () => {
    const lines: string[] = [];
    const r = await startRelay({ onRequestLog: (e) => lines.push(JSON.stringify(e)) });
    try {
      useOllama(r, ollama);
      const device = await register(r);
      await send(r.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(device.token), body: chatBody() });
      await socketChat(r, device.token, { first: chatBody() });
      await send(r.url, '/v1/remote/info', { headers: bearer(r.token) });
      await expect.poll(() => lines.length).toBeGreaterThanOrEqual(4);
      const entries = lines.map((l) => JSON.parse(l));
      expect(entries.find((e) => e.path === '/v1/chat/stream')).toMatchObject({ device: device.id, status: 200 });
      expect(entries.find((e) => e.path === '/v1/chat/ws')).toMatchObject({ device: device.id, status: 101 });
      expect(entries.find((e) => e.path === '/v1/remote/info').device).toBeUndefined();
      expect(lines.join('\n')).not.toContain(device.token);
      expect(lines.join('\n')).not.toContain(r.token);
    } finally {
      await r.close();
    }
  });
});

describe('revoking', () => {
  it('ends the device\'s live SSE, resumable and WebSocket streams at once with the removal message; other clients stream on', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 160 }, (_, i) => `w${i} `), chunkDelayMs: 50 });
    const device = await register(t);
    const started = Date.now();
    const sse = send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(device.token), body: chatBody() });
    const key = newKey();
    const resumed = resumable(t.url, device.token, key);
    let open = false;
    const ws = socketChat(t, device.token, { first: chatBody(), onOpen: () => (open = true) });
    // A socket still waiting for its request ends too.
    const idle = socketChat(t, device.token, {});
    const desk = send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody() });
    await expect.poll(() => open && t.relay.activeStreams >= 5).toBe(true);
    await expect.poll(() => ollama.requests.filter((r) => r.path === '/api/chat').length).toBeGreaterThanOrEqual(4);
    expect((await revoke(t, device.id)).status).toBe(204);
    const [sseReply, resumedReply, wsChat, idleChat] = await Promise.all([sse, resumed, ws, idle]);
    // The provider would have taken 8 s; the streams ended at the revocation.
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(parseEvents(sseReply.body).at(-1)).toEqual({ type: 'error', message: DEVICE_REMOVED_MESSAGE });
    expect(parseNumbered(completeBlocks(resumedReply.body)).at(-1)!.event).toEqual({ type: 'error', message: DEVICE_REMOVED_MESSAGE });
    expect(wsChat.events.at(-1)).toEqual({ type: 'error', message: DEVICE_REMOVED_MESSAGE });
    expect(idleChat.events.at(-1)).toEqual({ type: 'error', message: DEVICE_REMOVED_MESSAGE });
    // The desk's own stream is untouched.
    expect(t.relay.activeStreams).toBeGreaterThanOrEqual(1);
    const deskEvents = parseEvents((await desk).body);
    expect(deskEvents.at(-1).type).toBe('done');
  }, 20_000);

  it('refuses the revoked token at every door with the CONTRACT 401 body', async () => {
    const device = await register(t);
    expect((await revoke(t, device.id)).status).toBe(204);
    const doors = await everyDoor(t, device.token);
    for (const [door, reply] of Object.entries(doors)) {
      expect(reply.status, door).toBe(401);
      // Ollama's door words its errors as Ollama does; every other door as CONTRACT.
      if (door === 'ollama') continue;
      const body = door.startsWith('ws') ? reply.json : (reply as Reply).json;
      if (door === 'openai' || door === 'openaiModels') {
        // OpenAI's own shape, which its SDKs read.
        expect(body.error.code, door).toBe('invalid_api_key');
        continue;
      }
      expect(Object.keys(body), door).toEqual(['error']);
      // Issue 36: a removed phone is told it was removed, not that its token is unknown.
      expect(body.error.code, door).toBe('auth.device_removed');
      expect(body.error.message, door).toMatch(/This phone was removed at the desk/);
      expect(typeof body.error.request_id).toBe('string');
    }
  });
});

describe('per-device stream limit', () => {
  it('one device holds at most half the slots (429 chat.too_many_streams); the desk and another device still get theirs', async () => {
    const r = await startRelay({ maxConcurrentStreams: () => 4 });
    try {
      useOllama(r, ollama);
      ollama.set({ mode: 'normal', reply: Array.from({ length: 40 }, (_, i) => `w${i} `), chunkDelayMs: 50 });
      const a = await register(r, 'A');
      const b = await register(r, 'B');
      const open = (token: string) => send(r.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(token), body: chatBody() });
      const held = [open(a.token), open(a.token)];
      await expect.poll(() => r.relay.activeStreams).toBe(2);
      const third = await send(r.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(a.token), body: chatBody() });
      expect(third.status).toBe(429);
      expect(third.json.error.code).toBe('chat.too_many_streams');
      expect(third.json.error.message).toMatch(/This device already has 2 chat streams/);
      expect(third.headers['retry-after']).toBe('1');
      // Another device and the desk still get theirs.
      const others = [open(b.token), open(r.token)];
      await expect.poll(() => r.relay.activeStreams).toBe(4);
      for (const reply of await Promise.all([...held, ...others])) expect(parseEvents(reply.body).at(-1).type).toBe('done');
    } finally {
      await r.close();
    }
  }, 20_000);
});

describe('restarts', () => {
  it('with rememberDevices off, device tokens die with the relay and nothing is written', async () => {
    const r = await startRelay({ rememberDevices: false });
    useOllama(r, ollama);
    const device = await register(r);
    expect(() => statSync(devicesPath(r.dir))).toThrow();
    await r.relay.stop();
    await r.relay.start();
    const restarted = { url: r.relay.url! };
    const after = await list(restarted, device.token);
    expect(after.status).toBe(401);
    expect(after.json.error.code).toBe('auth.invalid_token');
    expect((await list(restarted, r.token)).json).toEqual([]);
    await r.close();
  });

  it('with rememberDevices on, devices survive a restart as salted hashes in a 0600 file, and turning it off deletes the file', async () => {
    const r = await startRelay({ rememberDevices: true });
    const options = r.relay.options;
    useOllama(r, ollama);
    const phone = await register(r, 'iPhone Safari');
    const tablet = await register(r, 'iPad Safari');
    const file = devicesPath(r.dir);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(phone.token);
    expect(text).not.toContain(tablet.token);
    expect(text).not.toContain(phone.token.slice(4));
    expect(text).not.toContain(Buffer.from(phone.token).toString('base64url'));
    const stored = JSON.parse(text);
    expect(stored.devices.map((d: any) => d.name)).toEqual(['iPhone Safari', 'iPad Safari']);
    for (const d of stored.devices) expect(Object.keys(d).sort()).toEqual(['createdAt', 'hash', 'id', 'lastSeen', 'name']);

    // A new relay (a restart of VS Code or of deskrelay serve) with the same config dir.
    await r.relay.stop();
    const again = new RelayServer({ ...options, port: 0, rememberDevices: true });
    const started = await again.start();
    try {
      const afterRestart = await send(started.url, '/v1/remote/info', { headers: bearer(phone.token) });
      expect(afterRestart.status).toBe(200);
      expect(started.token).not.toBe(r.token);
      expect(again.devices().map((d) => d.name)).toEqual(['iPhone Safari', 'iPad Safari']);
      // A phone renamed in its Settings: the file holds the new name at once.
      const renamed = await send(started.url, `/v1/devices/${phone.id}`, { method: 'PATCH', headers: json(phone.token), body: '{"name":"Work iPhone"}' });
      expect(renamed.status).toBe(200);
      expect(JSON.parse(readFileSync(file, 'utf8')).devices.map((d: any) => d.name)).toEqual(['Work iPhone', 'iPad Safari']);
      // Revoked while remembering: gone from the file too.
      expect(await again.revokeDevice(tablet.id)).toBe(true);
      expect(readFileSync(file, 'utf8')).not.toContain(tablet.id);
    } finally {
      await again.stop();
    }
    const off = new RelayServer({ ...options, port: 0, rememberDevices: false });
    const offStarted = await off.start();
    try {
      expect(() => statSync(file)).toThrow();
      expect((await send(offStarted.url, '/v1/remote/info', { headers: bearer(phone.token) })).status).toBe(401);
    } finally {
      await off.stop();
      await r.close();
    }
  });

  it('forgetDevices() ends every device at once and empties the file', async () => {
    const r = await startRelay({ rememberDevices: true });
    useOllama(r, ollama);
    const a = await register(r);
    const b = await register(r);
    expect(await r.relay.forgetDevices()).toBe(2);
    for (const d of [a, b]) expect((await list(r, d.token)).status).toBe(401);
    expect(JSON.parse(readFileSync(devicesPath(r.dir), 'utf8')).devices).toEqual([]);
    await r.close();
  });

  it('a devices file that is not ours is moved aside and the relay starts with no devices', async () => {
    const r = await startRelay({ rememberDevices: true });
    const options = r.relay.options;
    await r.relay.stop();
    writeFileSync(devicesPath(r.dir), '{"version":1,"salt":"x","devices":[{"token":"drd_x"}]}');
    const again = new RelayServer({ ...options, port: 0 });
    await again.start();
    try {
      expect(again.devices()).toEqual([]);
      expect(readFileSync(`${devicesPath(r.dir)}.unreadable`, 'utf8')).toContain('drd_x');
      expect(r.logLines.some((l) => l.startsWith('warn devices:') && l.includes('moved aside'))).toBe(true);
    } finally {
      await again.stop();
      await r.close();
    }
  });
});
