/**
 * Domain errors, dialects at the door (issue 37): the chat service refuses with a ChatError that
 * knows no HTTP, and each door words that one refusal in its own dialect: CONTRACT's error body
 * (and the WebSocket's error event), OpenAI's error object, Ollama's `{"error": …}`.
 */
import { describe, expect, it } from 'vitest';
import { ChatError } from '../../server/src/chat/errors';
import { ChatService } from '../../server/src/chat/service';
import { silentLogger } from '../../server/src/logger';
import type { OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, send, type Reply } from '../helpers/http';
import type { TestRelay } from '../helpers/relay';
import { relayWithOllama, withOneSlot } from './helpers';

const hello = [{ role: 'user', content: 'hi' }];

/** One chat request through each of the three doors, as that door's clients send it. */
const DOORS = {
  contract: { path: '/v1/chat/stream', body: { messages: hello }, accept: 'text/event-stream' },
  openai: { path: '/v1/chat/completions', body: { model: 'x', messages: hello, stream: true }, accept: 'text/event-stream' },
  ollama: { path: '/api/chat', body: { model: 'x', messages: hello, stream: true }, accept: 'application/x-ndjson' },
} as const;

function ask(t: TestRelay, door: keyof typeof DOORS): Promise<Reply> {
  const { path, body, accept } = DOORS[door];
  return send(t.url, path, { method: 'POST', headers: { ...bearer(t.token), 'Content-Type': 'application/json', Accept: accept }, body: JSON.stringify(body) });
}

/** What each door's client reads as the refusal's message and code, and that its shape is the door's own. */
function refusalOf(door: keyof typeof DOORS, reply: Reply): { message: string; code: string | null } {
  if (door === 'contract') {
    expect(reply.json).toEqual({ error: { code: expect.any(String), message: expect.any(String), request_id: reply.headers['x-request-id'] } });
    return { message: reply.json.error.message, code: reply.json.error.code };
  }
  if (door === 'openai') {
    expect(reply.json).toEqual({ error: { message: expect.any(String), type: expect.any(String), param: null, code: expect.any(String) } });
    return { message: reply.json.error.message, code: reply.json.error.code };
  }
  expect(reply.json).toEqual({ error: expect.any(String) });
  return { message: reply.json.error, code: null };
}

describe("a ChatError in each door's dialect", () => {
  let t: TestRelay;
  let ollama: OllamaStandIn;
  relayWithOllama({}, (s) => ({ t, ollama } = s));

  it('the chat service refuses with a ChatError, not an HTTP error', () => {
    const chat = new ChatService({
      providers: { active: () => ({ ok: false, reason: 'none' }), list: () => [] } as never,
      keys: { get: async () => undefined } as never,
      providerIdleMs: 1000,
      maxConcurrentStreams: () => 0,
      logger: silentLogger,
    });
    const noProvider = (() => {
      try {
        chat.provider();
      } catch (err) {
        return err;
      }
    })();
    expect(noProvider).toBeInstanceOf(ChatError);
    expect(noProvider).not.toHaveProperty('status');
    expect(noProvider).toMatchObject({ code: 'chat.no_provider' });
    expect(() => chat.reserve()).toThrow(expect.objectContaining({ code: 'chat.too_many_streams', retryAfterS: 1 }) as never);
  });

  it('no usable provider: 412 in all three doors, the same message, each in its own shape', async () => {
    t.setActive({ ok: false, reason: 'cloud', id: 'deskrelay-cloud' });
    const seen = new Set<string>();
    for (const door of ['contract', 'openai', 'ollama'] as const) {
      const reply = await ask(t, door);
      expect(reply.status, door).toBe(412);
      expect(reply.headers['content-type'], door).toMatch(/^application\/json/);
      const { message, code } = refusalOf(door, reply);
      expect(code, door).toBe({ contract: 'chat.no_provider', openai: 'model_not_found', ollama: null }[door]);
      expect(message, door).toContain('Switch to a local provider');
      seen.add(message);
    }
    expect(seen.size).toBe(1);
  });

  it('no free stream slot: 429 with Retry-After: 1 in all three doors, each in its own shape', async () => {
    for (const door of ['contract', 'openai', 'ollama'] as const) {
      await withOneSlot(ollama, Array.from({ length: 10 }, (_, i) => `r${i} `), 50, async (one) => {
        const first = ask(one, 'contract');
        await expect.poll(() => one.relay.activeStreams).toBe(1);
        const reply = await ask(one, door);
        expect(reply.status, door).toBe(429);
        expect(reply.headers['retry-after'], door).toBe('1');
        const { message, code } = refusalOf(door, reply);
        expect(code, door).toBe({ contract: 'chat.too_many_streams', openai: 'rate_limit_exceeded', ollama: null }[door]);
        expect(message, door).toBe('The desktop is already serving 1 chat streams; try again in a moment.');
        expect((await first).status).toBe(200);
      });
    }
  });
});
