/**
 * The limits of agent sessions kept on the desktop (issue 40): the newest 200, 32 MiB each; past
 * the count the least recently updated session's file goes (when saving and when the relay
 * starts), past the size a session's oldest events are left out, then the session is no longer
 * kept; docs/agent.md says so. Run against the store itself with small bounds.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../server/src/logger';
import { AgentSessionKeep, DEFAULT_AGENT_KEEP_BOUNDS, type StoredAgentSession } from '../../server/src/store/agentSessions';

let dir: string | undefined;
const lines: string[] = [];
const logger: Logger = { info: (l) => void lines.push(`info ${l}`), warn: (l) => void lines.push(`warn ${l}`), error: (l) => void lines.push(`error ${l}`) };
const id = (n: number) => `0000000${n}-0000-4000-8000-000000000000`;
const session = (n: number, updatedAt: number, events = 1, text = 'hi'): StoredAgentSession => ({
  version: 1,
  id: id(n),
  folder: 'project',
  title: `session ${n}`,
  createdAt: updatedAt,
  updatedAt,
  status: 'idle',
  messages: [{ role: 'user', content: text }],
  transcript: [{ role: 'user', text }],
  events: Array.from({ length: events }, (_, i) => ({ id: i + 1, event: { type: 'text' as const, delta: `event ${i + 1} `.padEnd(100, '.') } })),
  pending: [],
  nextCall: 1,
});
/** Saves and waits until the file holds it. */
async function saved(keep: AgentSessionKeep, s: StoredAgentSession): Promise<void> {
  keep.save(s.id, () => s);
  await keep.close();
}

afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  lines.length = 0;
});

describe('kept sessions: limits', () => {
  it('the newest 200 sessions, 32 MiB each, and the docs say so', () => {
    expect(DEFAULT_AGENT_KEEP_BOUNDS).toEqual({ count: 200, bytes: 32 * 1024 * 1024 });
    const docs = readFileSync(join(__dirname, '..', '..', 'docs', 'agent.md'), 'utf8');
    expect(docs).toContain('the newest 200 sessions (past it the least recently updated one\'s file is deleted)');
    expect(docs).toContain('32 MiB a session (past it its oldest events are left out of the file');
  });

  it('past the count the least recently updated file goes, when saving and when the relay starts', async () => {
    dir = mkdtempSync(join(tmpdir(), 'deskrelay-keep-limits-'));
    for (const [n, at] of [[1, 1000], [2, 3000], [3, 2000]] as const) {
      const { keep } = await AgentSessionKeep.open(dir, logger, { count: 3 });
      await saved(keep, session(n, at));
    }
    expect(readdirSync(dir).sort()).toEqual([1, 2, 3].map((n) => `${id(n)}.json`));
    // Started with room for 2: the oldest (1) goes.
    const { keep, sessions } = await AgentSessionKeep.open(dir, logger, { count: 2 });
    expect(sessions.map((s) => s.id)).toEqual([id(2), id(3)]);
    expect(existsSync(join(dir, `${id(1)}.json`))).toBe(false);
    // A new one past the count: the least recently updated (3) goes.
    await saved(keep, session(4, 4000));
    expect(readdirSync(dir).sort()).toEqual([2, 4].map((n) => `${id(n)}.json`));
    expect(lines.some((l) => l.includes(`${id(3).slice(0, 8)} deleted (the desktop keeps 2)`))).toBe(true);
  });

  it('past the size its oldest events are left out; still too big, it is no longer kept', async () => {
    dir = mkdtempSync(join(tmpdir(), 'deskrelay-keep-limits-'));
    const { keep } = await AgentSessionKeep.open(dir, logger, { bytes: 20_000 });
    await saved(keep, session(1, 1000, 400));
    const kept = readFileSync(join(dir, `${id(1)}.json`), 'utf8');
    expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(20_000);
    const stored = JSON.parse(kept.slice(kept.indexOf('\n') + 1)) as StoredAgentSession;
    expect(stored.events.length).toBeGreaterThan(0);
    expect(stored.events.length).toBeLessThan(400);
    expect(stored.events.at(-1)!.id).toBe(400);
    expect(stored.transcript).toEqual([{ role: 'user', text: 'hi' }]);

    const again = (await AgentSessionKeep.open(dir, logger, { bytes: 20_000 })).keep;
    await saved(again, session(1, 2000, 1, 'x'.repeat(30_000)));
    expect(readdirSync(dir)).toEqual([]);
    expect(lines.some((l) => l.startsWith('warn') && l.includes(`${id(1).slice(0, 8)} is past 20000 bytes and is no longer kept`))).toBe(true);
  });
});
