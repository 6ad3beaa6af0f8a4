/**
 * Conversations kept on the desktop (issue 30), through real HTTP on loopback with the Ollama
 * stand-in: off by default (403, nothing written), two clients seeing the same chats, a relay
 * restart (new token, same conversation), a reply followed live by another client and resumed
 * after a cut, rename and delete through the change feed, the store's bounds and 0600 files.
 */
import { mkdtempSync, readdirSync, rmSync, statSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OLLAMA_DEFAULT_REPLY, startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, chatBody, chatHeaders, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { completeBlocks, parseNumbered, type NumberedEvent } from '../doors/helpers';
import { NodeWorkspace } from '../../server/src/agent';
import { agentDevice } from '../helpers/devices';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG, 'base64').length;

let ollama: OllamaStandIn;
const relays: TestRelay[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  ollama = await startOllamaStandIn();
});
afterEach(async () => {
  ollama.set({ mode: 'normal' });
  for (const r of relays.splice(0)) await r.close();
});
afterAll(async () => {
  await ollama?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function relay(options: Parameters<typeof startRelay>[0] = {}): Promise<TestRelay> {
  const t = await startRelay({ keepAliveMs: 200, keepConversations: () => true, ...options });
  t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
  relays.push(t);
  return t;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'deskrelay-conv-'));
  dirs.push(dir);
  return dir;
}

const json = (token: string) => ({ ...bearer(token), 'Content-Type': 'application/json' });
const post = (t: { url: string; token: string }, path: string, body: unknown) => send(t.url, path, { method: 'POST', headers: json(t.token), body: JSON.stringify(body) });

async function createConversation(t: { url: string; token: string }, body: unknown = {}): Promise<string> {
  const reply = await post(t, '/v1/conversations', body);
  expect(reply.status, reply.body).toBe(201);
  return reply.json.id;
}

/** Follows a conversation's (or the change feed's) events until `until` holds for what arrived. */
function follow(t: { url: string; token: string }, path: string, until: (events: NumberedEvent[]) => boolean, lastEventId?: number) {
  return send(t.url, path, {
    headers: { ...bearer(t.token), Accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'Last-Event-ID': String(lastEventId) }) },
    abortWhen: (body) => until(parseNumbered(completeBlocks(body))),
  }).then((reply) => ({ reply, events: parseNumbered(completeBlocks(reply.body)) }));
}

const ended = (events: NumberedEvent[]) => events.some((e) => e.event.type === 'status' && e.event.status !== 'running');
const textOf = (events: NumberedEvent[]) => events.filter((e) => e.event.type === 'text').map((e) => e.event.delta).join('');

/** Sends a message and waits for its reply to end, following the conversation's events. */
async function say(t: { url: string; token: string }, id: string, content: unknown) {
  const started = await post(t, `/v1/conversations/${id}/messages`, { content });
  expect(started.status, started.body).toBe(202);
  return follow(t, `/v1/conversations/${id}/events`, ended, started.json.lastEventId);
}

describe('with keepConversations off (the default)', () => {
  it('answers every /v1/conversations path 403 conversations.disabled, saying where to turn it on, and keeps nothing of a chat', async () => {
    const t = await startRelay({ keepAliveMs: 200 });
    relays.push(t);
    t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
    const id = '0b6f3c1e-9a55-4c1b-8f0e-2b8f6c1d2e3f';
    const calls: [string, string, unknown?][] = [
      ['GET', '/v1/conversations'],
      ['POST', '/v1/conversations', {}],
      ['GET', '/v1/conversations/events'],
      ['GET', `/v1/conversations/${id}`],
      ['PUT', `/v1/conversations/${id}`, { title: 'x' }],
      ['DELETE', `/v1/conversations/${id}`],
      ['POST', `/v1/conversations/${id}/messages`, { content: 'Hi' }],
      ['GET', `/v1/conversations/${id}/events`],
      ['POST', `/v1/conversations/${id}/stop`],
      ['GET', `/v1/conversations/${id}/export`],
    ];
    for (const [method, path, body] of calls) {
      const reply = await send(t.url, path, { method, headers: json(t.token), ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      expect(reply.status, `${method} ${path}`).toBe(403);
      expect(reply.json.error.code).toBe('conversations.disabled');
      expect(reply.json.error.message).toContain('keepConversations');
    }
    // Still behind the token first.
    expect((await send(t.url, '/v1/conversations')).status).toBe(401);
    const chat = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(t.token), body: chatBody('Remember me') });
    expect(chat.status).toBe(200);
    expect(chat.body).toContain('"done"');
    expect(readdirSync(t.dir)).not.toContain('conversations');
    expect(JSON.stringify(readdirSync(t.dir, { recursive: true }))).not.toMatch(/\.json"/);
  });

  it('refuses at once when the setting is turned off while running, and serves again when turned on', async () => {
    let on = true;
    const t = await relay({ keepConversations: () => on });
    const id = await createConversation(t, { title: 'Kept' });
    on = false;
    expect((await send(t.url, `/v1/conversations/${id}`, { headers: bearer(t.token) })).status).toBe(403);
    on = true;
    expect((await send(t.url, `/v1/conversations/${id}`, { headers: bearer(t.token) })).json.title).toBe('Kept');
  });
});

describe('with keepConversations on', () => {
  it('shows a chat started by one client to a second client (a device), with the reply, and to a restarted relay with a new token', async () => {
    const configDir = tempDir();
    const a = await relay({ configDir });
    const device = await post(a, '/v1/devices', { name: 'Second phone' });
    expect(device.status).toBe(201);
    const b = { url: a.url, token: device.json.token as string };

    const id = await createConversation(a, { title: 'Trip plans', system: 'Be brief.' });
    const { events } = await say(a, id, 'Where should we go?');
    expect(textOf(events)).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(events.at(-1)!.event).toEqual({ type: 'status', status: 'idle' });

    const list = await send(b.url, '/v1/conversations', { headers: bearer(b.token) });
    expect(list.status).toBe(200);
    expect(list.json.conversations).toEqual([{ id, title: 'Trip plans', updatedAt: expect.any(String), kind: 'chat', preview: OLLAMA_DEFAULT_REPLY.join('') }]);
    const full = await send(b.url, `/v1/conversations/${id}`, { headers: bearer(b.token) });
    expect(full.json).toMatchObject({
      id,
      kind: 'chat',
      title: 'Trip plans',
      system: 'Be brief.',
      status: 'idle',
      messages: [
        { role: 'user', content: 'Where should we go?' },
        { role: 'assistant', content: OLLAMA_DEFAULT_REPLY.join('') },
      ],
    });
    // The provider got the system prompt and the history as a chat request.
    expect(ollama.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Where should we go?' },
    ]);

    // B continues the same conversation; the provider sees the whole history.
    await say(b, id, 'And when?');
    expect(ollama.requests.at(-1)!.body.messages.map((m: any) => m.content)).toEqual(['Be brief.', 'Where should we go?', OLLAMA_DEFAULT_REPLY.join(''), 'And when?']);

    const oldToken = a.token;
    await a.relay.stop();
    relays.splice(relays.indexOf(a), 1);
    const again = await relay({ configDir });
    expect(again.token).not.toBe(oldToken);
    expect((await send(again.url, '/v1/conversations', { headers: bearer(oldToken) })).status).toBe(401);
    const after = await send(again.url, `/v1/conversations/${id}`, { headers: bearer(again.token) });
    expect(after.status).toBe(200);
    expect(after.json.messages.map((m: any) => m.content)).toEqual(['Where should we go?', OLLAMA_DEFAULT_REPLY.join(''), 'And when?', OLLAMA_DEFAULT_REPLY.join('')]);
    // Never the token in what is kept.
    for (const name of readdirSync(join(configDir, 'conversations'))) {
      const text = readFileSync(join(configDir, 'conversations', name), 'latin1');
      expect(text).not.toContain(oldToken);
      expect(text).not.toContain(b.token);
    }
  });

  it('lets a second client follow a reply live, resume it after a cut, and see the reply in progress in GET', async () => {
    const reply = Array.from({ length: 12 }, (_, i) => `part${i} `);
    ollama.set({ mode: 'normal', reply, chunkDelayMs: 60 });
    const a = await relay();
    const id = await createConversation(a);
    const started = await post(a, `/v1/conversations/${id}/messages`, { content: 'Tell me a story' });
    expect(started.status).toBe(202);

    // Client B joins after the reply started, then its connection is cut after a few deltas.
    const first = await follow(a, `/v1/conversations/${id}/events`, (ev) => ev.filter((e) => e.event.type === 'text').length >= 3);
    expect(first.events[0]!.event).toEqual({ type: 'user', text: 'Tell me a story' });
    expect(first.events[1]!.event).toEqual({ type: 'status', status: 'running' });
    const last = first.events.at(-1)!.id!;
    const during = await send(a.url, `/v1/conversations/${id}`, { headers: bearer(a.token) });
    expect(during.json.status).toBe('running');
    expect(during.json.messages.at(-1)).toMatchObject({ role: 'assistant', pending: true });
    expect(reply.join('')).toContain(during.json.messages.at(-1).content);

    const rest = await follow(a, `/v1/conversations/${id}/events`, ended, last);
    expect(rest.events[0]!.id).toBe(last + 1);
    expect(textOf(first.events) + textOf(rest.events)).toBe(reply.join(''));
    expect(rest.events.at(-1)!.event).toEqual({ type: 'status', status: 'idle' });

    // A client arriving later replays the whole turn from the start.
    const late = await follow(a, `/v1/conversations/${id}/events`, ended, 0);
    expect(textOf(late.events)).toBe(reply.join(''));

    const bad = await send(a.url, `/v1/conversations/${id}/events`, { headers: { ...bearer(a.token), 'Last-Event-ID': '9999' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toContain('this conversation has only sent events up to');
  });

  it('tells a client resuming after events the desktop no longer holds that they were dropped, and where the whole conversation is', async () => {
    // 300 deltas of 2,000 characters: past the 512 KiB a conversation's event log keeps.
    const reply = Array.from({ length: 300 }, (_, i) => `${String(i).padStart(4, '0')}${'x'.repeat(1996)}`);
    ollama.set({ mode: 'normal', reply });
    const a = await relay();
    const id = await createConversation(a);
    await say(a, id, 'A long one');
    const resumed = await follow(a, `/v1/conversations/${id}/events`, ended, 1);
    const missed = resumed.reply.body.match(/^data: (\{"type":"error"[^\n]*)$/m);
    expect(missed, resumed.reply.body.slice(0, 300)).not.toBeNull();
    expect(JSON.parse(missed![1]!).message).toMatch(/^Events 2 to \d+ were dropped \(the desktop keeps 524288 bytes of a conversation's events\); GET the conversation for all its messages\.$/);
    // What it still holds follows, ending with the reply's end; GET has the whole reply.
    expect(resumed.events.at(-1)!.event).toEqual({ type: 'status', status: 'idle' });
    const whole = await send(a.url, `/v1/conversations/${id}`, { headers: bearer(a.token) });
    expect(whole.json.messages.at(-1)).toMatchObject({ role: 'assistant', content: reply.join('') });
  });

  it('refuses a second message while replying (409), stops on request and keeps the partial reply with what happened', async () => {
    ollama.set({ mode: 'normal', reply: Array.from({ length: 40 }, () => 'word '), chunkDelayMs: 50 });
    const a = await relay();
    const id = await createConversation(a);
    expect((await post(a, `/v1/conversations/${id}/messages`, { content: 'Go on' })).status).toBe(202);
    const busy = await post(a, `/v1/conversations/${id}/messages`, { content: 'Another' });
    expect(busy.status).toBe(409);
    expect(busy.json.error.code).toBe('conversations.busy');
    await follow(a, `/v1/conversations/${id}/events`, (ev) => ev.some((e) => e.event.type === 'text'));
    expect((await post(a, `/v1/conversations/${id}/stop`, {})).status).toBe(204);
    const { events } = await follow(a, `/v1/conversations/${id}/events`, ended, 0);
    expect(events.at(-1)!.event).toEqual({ type: 'status', status: 'stopped' });
    expect(events.at(-2)!.event.type).toBe('error');
    await expect.poll(() => a.relay.activeStreams).toBe(0);
    const got = await send(a.url, `/v1/conversations/${id}`, { headers: bearer(a.token) });
    expect(got.json.messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);
    expect(got.json.messages[1].error).toBe('The reply was stopped by the client.');
    expect(got.json.messages[1].content).toMatch(/^(word )+$/);
  });

  it('tells open clients about creates, renames and deletes through the change feed, and deletes on disk', async () => {
    const a = await relay();
    const feed = follow(a, '/v1/conversations/events', (ev) => ev.some((e) => e.event.type === 'deleted'));
    await new Promise((r) => setTimeout(r, 100));
    const id = await createConversation(a, { title: 'Old name' });
    const renamed = await send(a.url, `/v1/conversations/${id}`, { method: 'PUT', headers: json(a.token), body: JSON.stringify({ title: 'New name', system: 'Speak French.' }) });
    expect(renamed.status).toBe(200);
    expect(renamed.json).toMatchObject({ id, title: 'New name', system: 'Speak French.' });
    const file = join(a.dir, 'conversations', `${id}.json`);
    expect(JSON.parse(readFileSync(file, 'utf8')).title).toBe('New name');
    expect((await send(a.url, `/v1/conversations/${id}`, { method: 'DELETE', headers: bearer(a.token) })).status).toBe(204);
    const { events } = await feed;
    expect(events.map((e) => e.event)).toEqual([
      { type: 'created', id },
      { type: 'changed', id },
      { type: 'deleted', id },
    ]);
    expect(existsSync(file)).toBe(false);
    const gone = await send(a.url, `/v1/conversations/${id}`, { headers: bearer(a.token) });
    expect(gone.status).toBe(404);
    expect(gone.json.error.code).toBe('conversations.not_found');
  });

  it('keeps files 0600 in a 0700 folder, photos as files beside the conversation, read back as the chat request sent them', async () => {
    const a = await relay();
    const id = await createConversation(a, { title: 'Photo' });
    await say(a, id, [{ type: 'text', text: 'What is this?' }, { type: 'image', mediaType: 'image/png', data: PNG }]);
    const dir = join(a.dir, 'conversations');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const names = readdirSync(dir);
    expect(names.sort()).toEqual([`${id}.0-0.png`, `${id}.json`]);
    for (const name of names) expect(statSync(join(dir, name)).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, `${id}.json`), 'utf8')).not.toContain(PNG);
    const got = await send(a.url, `/v1/conversations/${id}`, { headers: bearer(a.token) });
    expect(got.json.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', mediaType: 'image/png', data: PNG }] });
    expect(ollama.requests.at(-1)!.body.messages[0].images).toEqual([PNG]);
  });

  it('evicts the least recently updated conversations first past the count, bytes and photo bounds, telling the change feed', async () => {
    const a = await relay({ conversationBounds: { count: 3 } });
    const feed = follow(a, '/v1/conversations/events', (ev) => ev.some((e) => e.event.type === 'deleted'));
    await new Promise((r) => setTimeout(r, 100));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await createConversation(a, { title: `c${i}` }));
    // Touching the oldest makes the second the least recently updated.
    await send(a.url, `/v1/conversations/${ids[0]}`, { method: 'PUT', headers: json(a.token), body: JSON.stringify({ title: 'c0 again' }) });
    ids.push(await createConversation(a, { title: 'c3' }));
    const { events } = await feed;
    expect(events.find((e) => e.event.type === 'deleted')!.event.id).toBe(ids[1]);
    const list = await send(a.url, '/v1/conversations', { headers: bearer(a.token) });
    expect(list.json.conversations.map((c: any) => c.title)).toEqual(['c3', 'c0 again', 'c2']);
    expect(existsSync(join(a.dir, 'conversations', `${ids[1]}.json`))).toBe(false);

    const p = await relay({ conversationBounds: { photoBytes: PNG_BYTES * 2 } });
    const photo = [{ type: 'text', text: 'Look' }, { type: 'image', mediaType: 'image/png', data: PNG }];
    const first = await createConversation(p);
    await say(p, first, photo);
    const second = await createConversation(p);
    await say(p, second, photo);
    const third = await createConversation(p);
    await say(p, third, photo);
    const left = (await send(p.url, '/v1/conversations', { headers: bearer(p.token) })).json.conversations.map((c: any) => c.id);
    expect(left).toEqual([third, second]);
    expect(readdirSync(join(p.dir, 'conversations')).filter((n) => n.endsWith('.png')).sort()).toEqual([`${second}.0-0.png`, `${third}.0-0.png`].sort());

    const b = await relay({ conversationBounds: { bytes: 1500 } });
    const old = await createConversation(b, { title: 'old' });
    await say(b, old, 'x'.repeat(300));
    const next = await createConversation(b, { title: 'next' });
    await say(b, next, 'y'.repeat(900));
    const titles = (await send(b.url, '/v1/conversations', { headers: bearer(b.token) })).json.conversations.map((c: any) => c.title);
    expect(titles).toEqual(['next']);
    // One conversation alone past the bound is refused, not kept half.
    const huge = await post(b, `/v1/conversations/${next}/messages`, { content: 'z'.repeat(2000) });
    expect(huge.status).toBe(413);
    expect(huge.json.error.code).toBe('conversations.too_large');
  });

  it('replaces the messages with PUT (an edit and resend), photos included, and POST …/reply answers the conversation as it stands', async () => {
    const a = await relay();
    const id = await createConversation(a);
    await say(a, id, 'First try');
    const history = [
      { role: 'user', content: [{ type: 'text', text: 'Edited' }, { type: 'image', mediaType: 'image/png', data: PNG }] },
      { role: 'assistant', content: 'An answer from elsewhere' },
    ];
    const put = await send(a.url, `/v1/conversations/${id}`, { method: 'PUT', headers: json(a.token), body: JSON.stringify({ title: 'Edited', messages: history }) });
    expect(put.status, put.body).toBe(200);
    const got = await send(a.url, `/v1/conversations/${id}`, { headers: bearer(a.token) });
    expect(got.json.messages).toEqual(history);
    expect(readdirSync(join(a.dir, 'conversations')).sort()).toEqual([`${id}.0-0.png`, `${id}.json`]);
    await say(a, id, 'Next');
    expect(ollama.requests.at(-1)!.body.messages.map((m: any) => m.content)).toEqual(['Edited', 'An answer from elsewhere', 'Next']);
    const system = await send(a.url, `/v1/conversations/${id}`, { method: 'PUT', headers: json(a.token), body: JSON.stringify({ messages: [{ role: 'system', content: 'x' }] }) });
    expect(system.status).toBe(400);

    // A client that wrote the user's message itself asks for the reply to the conversation as it stands.
    const noUserLast = await post(a, `/v1/conversations/${id}/reply`, {});
    expect(noUserLast.status).toBe(400);
    await send(a.url, `/v1/conversations/${id}`, { method: 'PUT', headers: json(a.token), body: JSON.stringify({ messages: [{ role: 'user', content: 'Only this' }] }) });
    const started = await post(a, `/v1/conversations/${id}/reply`, {});
    expect(started.status).toBe(202);
    const { events } = await follow(a, `/v1/conversations/${id}/events`, ended, started.json.lastEventId);
    expect(events[0]!.event).toEqual({ type: 'status', status: 'running' });
    expect(textOf(events)).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(ollama.requests.at(-1)!.body.messages.map((m: any) => m.content)).toEqual(['Only this']);
  });

  it('exports a conversation as Markdown and checks what it is sent', async () => {
    const a = await relay();
    const id = await createConversation(a, { title: 'Recipe: soup!', system: 'You cook.' });
    await say(a, id, 'Soup?');
    const md = await send(a.url, `/v1/conversations/${id}/export`, { headers: bearer(a.token) });
    expect(md.status).toBe(200);
    expect(md.headers['content-type']).toBe('text/markdown; charset=utf-8');
    expect(md.headers['content-disposition']).toBe('attachment; filename="Recipe-soup.md"');
    expect(md.body).toContain('# Recipe: soup!');
    expect(md.body).toContain('## System\n\nYou cook.');
    expect(md.body).toContain(`## You\n\nSoup?\n\n## Assistant\n\n${OLLAMA_DEFAULT_REPLY.join('')}`);

    expect((await post(a, '/v1/conversations', { title: 'a\nb' })).json.error.code).toBe('request.invalid_body');
    expect((await post(a, `/v1/conversations/${id}/messages`, {})).json.error.message).toContain('"content" is required');
    expect((await post(a, `/v1/conversations/${id}/messages`, { content: [{ type: 'video' }] })).json.error.message).toBe('content[0].type must be "text" or "image".');
    expect((await post(a, `/v1/conversations/${id}/messages`, { content: '  ' })).status).toBe(400);
    expect((await send(a.url, '/v1/conversations/not-an-id', { headers: bearer(a.token) })).status).toBe(404);
  });

  it('lists the agent\'s sessions beside the chats as kind "agent", and none while the agent is off', async () => {
    const folder = tempDir();
    let folders = [new NodeWorkspace({ folder, name: 'repo', configDir: folder })];
    const a = await relay({ agent: { workspaces: () => folders } });
    const chat = await createConversation(a, { title: 'A chat' });
    const phone = await agentDevice(a);
    const session = await post({ url: a.url, token: phone.token }, '/v1/agent/sessions', { prompt: 'Look at the code' });
    expect(session.status, session.body).toBe(201);
    const list = await send(a.url, '/v1/conversations', { headers: bearer(a.token) });
    expect(list.json.conversations).toEqual([
      { id: session.json.id, title: 'Look at the code', updatedAt: expect.any(String), kind: 'agent', preview: expect.stringMatching(/^repo · /) },
      { id: chat, title: 'A chat', updatedAt: expect.any(String), kind: 'chat', preview: '' },
    ]);
    folders = [];
    const off = await send(a.url, '/v1/conversations', { headers: bearer(a.token) });
    expect(off.json.conversations.map((c: any) => c.kind)).toEqual(['chat']);
  });
});
