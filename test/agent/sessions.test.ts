// The agent's in-memory bounds: sessions (the oldest idle one dropped first, none made when all
// are busy), a session's event log (oldest events dropped, a resume told so), and stop while
// the model is answering.
import { describe, expect, it } from 'vitest';
import { JsonEventLog } from '../../server/src/streams/frameLog';
import { DEFAULT_LIMITS } from '../../server/src/agent/limits';
import { SessionStore } from '../../server/src/agent/session';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import type { ChatService, ChatHandle, Ending, ReplySink } from '../../server/src/chat/service';
import { silentLogger } from '../../server/src/logger';

/** A chat service whose replies never end until aborted: every session that sends stays busy. */
function hangingChat(): { chat: ChatService; started: number } {
  const state = { started: 0 };
  const chat = {
    provider: () => ({ id: 'p', kind: 'ollama' as const }),
    contextLength: async () => undefined,
    start: (_p: unknown, _m: unknown, sink: ReplySink): ChatHandle => {
      state.started++;
      const controller = new AbortController();
      const done = new Promise<Ending>((resolve) =>
        controller.signal.addEventListener('abort', () => {
          const ending: Ending = { ok: false, message: 'stopped' };
          sink.end(ending);
          resolve(ending);
        }),
      );
      return { provider: { id: 'p', kind: 'ollama' }, model: undefined, signal: controller.signal, abort: (r) => controller.abort(r), done };
    },
  } as unknown as ChatService;
  return { chat, get started() { return state.started; } };
}

const workspace = new NodeWorkspace({ folder: __dirname, configDir: '/nonexistent-config' });
const tick = () => new Promise((r) => setTimeout(r, 10));

describe('SessionStore', () => {
  it('drops the oldest idle session for a new one, and makes none when every session is busy', async () => {
    const fake = hangingChat();
    const store = new SessionStore({ chat: fake.chat, limits: { ...DEFAULT_LIMITS, maxSessions: 2 }, logger: silentLogger, push: () => {} });
    const a = store.create(workspace)!;
    a.send('work');
    await tick();
    expect(a.status).toBe('running');
    const b = store.create(workspace)!;
    expect(b.status).toBe('idle');
    const c = store.create(workspace)!;
    expect(store.get(b.id)).toBeUndefined();
    expect(store.get(a.id)).toBe(a);
    c.send('work too');
    await tick();
    expect(store.create(workspace)).toBeUndefined();
    // Stopped is not busy: it can make room.
    a.stop();
    expect(a.status).toBe('stopped');
    const d = store.create(workspace)!;
    expect(store.get(a.id)).toBeUndefined();
    expect(store.list().map((s) => s.id).sort()).toEqual([c.id, d.id].sort());
    store.closeAll();
    expect(store.list()).toEqual([]);
  });

  it('stop aborts the model request; a queued message is shown queued, kept, and joins before the next one', async () => {
    const fake = hangingChat();
    const store = new SessionStore({ chat: fake.chat, limits: DEFAULT_LIMITS, logger: silentLogger, push: () => {} });
    const s = store.create(workspace)!;
    s.send('first');
    // The session reads the folder's instructions before its first model call.
    while (fake.started === 0) await tick();
    s.send('queued while running');
    s.stop();
    await tick();
    expect(s.status).toBe('stopped');
    expect(fake.started).toBe(1);
    expect(s.snapshot().transcript).toEqual([{ role: 'user', text: 'first' }]);
    const events = s.log.since(0).frames.map((f) => JSON.parse(f.framed.slice(f.framed.indexOf('data: ') + 6)));
    expect(events).toContainEqual({ type: 'queued', text: 'queued while running' });
    s.send('next');
    await tick();
    expect(s.snapshot().transcript).toEqual([{ role: 'user', text: 'first' }, { role: 'user', text: 'queued while running' }, { role: 'user', text: 'next' }]);
    s.stop();
  });
});

describe('JsonEventLog', () => {
  it('keeps at most its cap of bytes; a resume needing a dropped event is told so', () => {
    const log = new JsonEventLog(200, { of: 'a session', whole: 'GET the session for its whole transcript' });
    for (let i = 0; i < 10; i++) log.append({ type: 'text', delta: `delta number ${i}` });
    expect(log.lastId).toBe(10);
    const all = log.since(0);
    expect(all.missed).toMatch(/^Events 1 to \d+ were dropped \(the desktop keeps 200 bytes of a session's events\); GET the session for its whole transcript\.$/);
    expect(all.frames.at(-1)!.framed).toBe('id: 10\ndata: {"type":"text","delta":"delta number 9"}\n\n');
    expect(all.frames.reduce((n, f) => n + f.bytes, 0)).toBeLessThanOrEqual(200);
    expect(log.since(9)).toEqual({ frames: [all.frames.at(-1)] });
  });
});
