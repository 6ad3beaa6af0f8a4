/**
 * Issue 35 finding 3: removing a device ends every stream and socket it holds, on every door —
 * a chat's SSE, a resumable reply, the WebSocket, an agent session's events, a conversation's
 * events and the conversations' change feed — and the desk's own streams go on.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, chatBody, chatHeaders, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { allowAgent, hold, registerDevice, within, type Held } from '../helpers/devices';
import { newKey, resumeHeaders } from '../doors/helpers';
import { NodeWorkspace } from '../../server/src/agent';
import { DEVICE_REMOVED_MESSAGE } from '../../server/src/protocol';

let ollama: OllamaStandIn;
let t: TestRelay;
let folder: string;

beforeAll(async () => {
  ollama = await startOllamaStandIn();
  folder = mkdtempSync(join(tmpdir(), 'deskrelay-revoke-'));
  writeFileSync(join(folder, 'a.txt'), 'hello\n');
  const workspace = new NodeWorkspace({ folder, configDir: join(folder, 'no-config') });
  t = await startRelay({ keepAliveMs: 200, keepConversations: () => true, conversationsDir: join(folder, 'conversations-store'), agent: { workspaces: () => [workspace] } });
  t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
});
afterAll(async () => {
  await t?.close();
  await ollama?.close();
  rmSync(folder, { recursive: true, force: true });
});

const json = (token: string) => ({ ...bearer(token), 'Content-Type': 'application/json' });

describe('revoking a device', () => {
  it('ends, within a second, every stream and socket it holds on every door; the desk streams on', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 400 }, (_, i) => `w${i} `), chunkDelayMs: 50 });
    const device = await registerDevice(t);
    await allowAgent(t, device.id);
    const conversation = await send(t.url, '/v1/conversations', { method: 'POST', headers: json(device.token), body: '{}' });
    expect(conversation.status, conversation.body).toBe(201);
    const session = await send(t.url, '/v1/agent/sessions', { method: 'POST', headers: json(device.token), body: JSON.stringify({ prompt: 'Look around' }) });
    expect(session.status, session.body).toBe(201);

    const streams: Record<string, Held> = {
      chat: hold(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(device.token), body: chatBody() }),
      resumable: hold(t.url, '/v1/chat/stream', { method: 'POST', headers: resumeHeaders(device.token, newKey()), body: chatBody() }),
      agentEvents: hold(t.url, `/v1/agent/sessions/${session.json.id}/events`, { headers: bearer(device.token) }),
      conversationEvents: hold(t.url, `/v1/conversations/${conversation.json.id}/events`, { headers: bearer(device.token) }),
      conversationChanges: hold(t.url, '/v1/conversations/events', { headers: bearer(device.token) }),
    };
    const desk = hold(t.url, '/v1/conversations/events', { headers: bearer(t.token) });
    const socket = new WebSocket(`${t.url.replace('http:', 'ws:')}/v1/chat/ws`, [], { headers: bearer(device.token) });
    socket.on('error', () => {});
    const socketClosed = new Promise<void>((r) => socket.on('close', () => r()));
    await new Promise<void>((r) => socket.on('open', () => r()));
    for (const [name, s] of Object.entries(streams)) expect(await s.opened, name).toBe(200);
    expect(await desk.opened).toBe(200);
    // Every stream is live before the removal: none has ended on its own.
    for (const [name, s] of Object.entries(streams)) expect(await within(s.ended, 100), name).toBe(false);

    expect((await send(t.url, `/v1/devices/${device.id}`, { method: 'DELETE', headers: bearer(t.token) })).status).toBe(204);
    for (const [name, s] of Object.entries(streams)) {
      expect(await within(s.ended, 1_000), `${name} ended`).toBe(true);
      expect(s.body(), name).toContain(DEVICE_REMOVED_MESSAGE);
    }
    expect(await within(socketClosed, 1_000), 'the WebSocket closed').toBe(true);
    // The desk's own feed is still open.
    expect(await within(desk.ended, 100)).toBe(false);
    desk.close();
  }, 20_000);

  it('a phone that removes itself still gets its 204, and its other streams end', async () => {
    const device = await registerDevice(t);
    const feed = hold(t.url, '/v1/conversations/events', { headers: bearer(device.token) });
    expect(await feed.opened).toBe(200);
    expect((await send(t.url, `/v1/devices/${device.id}`, { method: 'DELETE', headers: bearer(device.token) })).status).toBe(204);
    expect(await within(feed.ended, 1_000)).toBe(true);
  });
});
