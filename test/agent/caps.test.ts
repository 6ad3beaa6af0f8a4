/**
 * One model reply cannot grow a session without bound (issue 35, finding 8): the conversation
 * cap counts every tool result as it is added, and one reply carries at most 64 tool calls. An
 * agent session in-process (its limits set small) with the real chat service and the scripted
 * OpenAI-compatible model (test/fixtures/providers/scripted.ts).
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import { DEFAULT_LIMITS, MAX_CALLS_PER_REPLY, type AgentLimits } from '../../server/src/agent/limits';
import { SessionStore, type AgentSession } from '../../server/src/agent/session';
import { ChatService } from '../../server/src/chat/service';
import { silentLogger } from '../../server/src/logger';
import { startScriptedModel, toolResults, type ScriptedModel } from '../fixtures/providers/scripted';
import { waitUntil } from './support';

let model: ScriptedModel;
let folder: string;
const LINE = `${'x'.repeat(99)}\n`;

beforeAll(async () => {
  folder = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-caps-')));
  // 20,000 bytes: each read of it adds more than 20,000 characters (line numbers added).
  writeFileSync(join(folder, 'big.txt'), LINE.repeat(200));
  model = await startScriptedModel();
});

afterAll(async () => {
  await model?.close();
  rmSync(folder, { recursive: true, force: true });
});

function start(limits: Partial<AgentLimits>): AgentSession {
  const chat = new ChatService({
    providers: { active: () => ({ ok: true, config: { id: 'scripted', kind: 'openai-compatible', baseUrl: `${model.url}/v1`, model: 'gpt-4o' } }) },
    keys: { get: async () => undefined, howToSet: () => 'no key' },
    providerIdleMs: 10_000,
    maxConcurrentStreams: () => 8,
    logger: silentLogger,
  });
  const store = new SessionStore({ chat, limits: { ...DEFAULT_LIMITS, ...limits }, logger: silentLogger, push: () => {} });
  return store.create(new NodeWorkspace({ folder, configDir: '/nonexistent-config' }))!;
}

const results = (s: AgentSession) => s.snapshot().transcript.filter((t) => t.role === 'tool') as { output: string; ok: boolean }[];

describe('the conversation cap counts every tool result', () => {
  it('stops running the calls of one reply once the conversation is full, and ends the turn', async () => {
    const cap = 200_000;
    model.script([{ calls: Array.from({ length: 60 }, () => ({ name: 'read_file', arguments: { path: 'big.txt' } })) }, { text: ['never asked'] }]);
    const served = model.served;
    const s = start({ maxConversationChars: cap });
    s.send('read it all');
    await waitUntil(() => !s.busy, () => `the turn to end: ${s.status}`);
    const all = results(s);
    const ran = all.filter((r) => r.ok);
    // At most cap / 20,000 reads and the one that passed it ran; the rest were answered without running.
    expect(ran.length).toBeGreaterThan(5);
    expect(ran.length).toBeLessThanOrEqual(Math.ceil(cap / 20_000) + 1);
    expect(all.slice(ran.length).every((r) => r.output === 'Not run: the session is full.')).toBe(true);
    // What the session holds for the model passed the cap by at most one result.
    expect(s.conversationSize).toBeLessThan(cap + DEFAULT_LIMITS.maxResultBytes + 60 * 100);
    expect(model.served - served).toBe(1);
    expect(s.log.since(0).frames.map((f) => f.framed).join('')).toMatch(/"type":"error","message":"This session's conversation passed 200000 characters/);
    s.close();
  });
});

describe('tool calls per reply', () => {
  it(`runs at most ${MAX_CALLS_PER_REPLY} calls of one reply; the model is told the rest were not run`, async () => {
    const n = MAX_CALLS_PER_REPLY + 6;
    model.script([
      { calls: Array.from({ length: n }, () => ({ name: 'list_files', arguments: {} })) },
      {
        check: (body) => {
          const told = toolResults(body);
          expect(told).toHaveLength(n);
          expect(told.slice(0, MAX_CALLS_PER_REPLY).every((r) => r.content === 'big.txt')).toBe(true);
          for (const r of told.slice(MAX_CALLS_PER_REPLY)) expect(r.content).toBe(`Not run: one reply may carry at most ${MAX_CALLS_PER_REPLY} tool calls; call again for the rest.`);
        },
        text: ['ok'],
      },
    ]);
    const s = start({});
    s.send('list a lot');
    await waitUntil(() => s.status === 'idle' || s.status === 'failed', () => `the turn to end: ${s.status}`);
    expect(model.failures).toEqual([]);
    expect(results(s).filter((r) => r.ok)).toHaveLength(MAX_CALLS_PER_REPLY);
    s.close();
  });
});
