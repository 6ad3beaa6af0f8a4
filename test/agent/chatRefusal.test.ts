// The chat core's refusals reach the agent as its own error values (ChatError, issue 37), not as
// HTTP errors: a session whose model cannot be asked fails its turn with the refusal's words.
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../server/src/agent/limits';
import { SessionStore } from '../../server/src/agent/session';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import { ChatService } from '../../server/src/chat/service';
import { silentLogger } from '../../server/src/logger';
import type { ActiveProvider, ProviderConfig } from '../../server/src/providers/types';

const workspace = new NodeWorkspace({ folder: __dirname, configDir: '/nonexistent-config' });
const LOCAL: ProviderConfig = { id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:9', model: 'm' };

function store(active: () => ActiveProvider, streams: number): SessionStore {
  const chat = new ChatService({ providers: { active }, keys: { get: async () => undefined, howToSet: () => '' }, providerIdleMs: 5_000, maxConcurrentStreams: () => streams, logger: silentLogger });
  return new SessionStore({ chat, limits: DEFAULT_LIMITS, logger: silentLogger, push: () => {} });
}

const events = (s: NonNullable<ReturnType<SessionStore['create']>>) => s.log.since(0).frames.map((f) => JSON.parse(f.framed.slice(f.framed.indexOf('data: ') + 6)));

describe("the agent and the chat core's refusals", () => {
  for (const [name, active, streams, said] of [
    ['no usable provider', () => ({ ok: false, reason: 'none' }) as ActiveProvider, 4, /No provider is active on the desktop/],
    ['no free stream slot', () => ({ ok: true, config: LOCAL }) as ActiveProvider, 0, /already serving 0 chat streams/],
  ] as const) {
    it(`${name}: the turn fails with the refusal's message (an error event), not a crash`, async () => {
      const agents = store(active, streams);
      const s = agents.create(workspace)!;
      s.send('hello');
      await expect.poll(() => s.status).toBe('failed');
      expect(events(s)).toContainEqual({ type: 'error', message: expect.stringMatching(said) });
      agents.closeAll();
    });
  }
});
