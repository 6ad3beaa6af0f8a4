/**
 * The reply in progress, kept on the phone while it streams: its Idempotency-Key, its chat, its
 * exact request body, the last event id seen and the text received up to it. A page that reloads
 * (or that iOS discarded in the background, or that a push notification opened) resumes it from
 * there with the same key; the relay replays what came after (docs/resumable-streams.md).
 */
import { localStore } from './storage';

const KEY = 'deskrelay.pendingTurn';

export interface PendingTurn {
  key: string;
  chatId: string;
  body: string;
  lastId: number | null;
  /** What was received up to `lastId` (thinking included). */
  raw: string;
  /** When the reply's thinking began (epoch ms), so "Thought for N s" counts from then after a reload. */
  thinkStarted?: number;
  /** How long it thought, once the thinking ended. */
  thinkMs?: number;
}

export function readPending(): PendingTurn | null {
  const p = localStore.read(KEY) as Partial<PendingTurn> | null;
  if (!p || typeof p.key !== 'string' || typeof p.body !== 'string' || typeof p.chatId !== 'string') return null;
  const lastId = typeof p.lastId === 'number' && Number.isInteger(p.lastId) && p.lastId > 0 ? p.lastId : null;
  // Text without the id it ends at cannot be continued: replay from the start instead.
  const raw = lastId !== null && typeof p.raw === 'string' ? p.raw : '';
  const thinkStarted = raw && typeof p.thinkStarted === 'number' && p.thinkStarted <= Date.now() ? p.thinkStarted : undefined;
  const thinkMs = thinkStarted && typeof p.thinkMs === 'number' && p.thinkMs >= 0 ? p.thinkMs : undefined;
  return { key: p.key, chatId: p.chatId, body: p.body, lastId, raw, ...(thinkStarted ? { thinkStarted } : {}), ...(thinkMs !== undefined ? { thinkMs } : {}) };
}

export function writePending(p: PendingTurn): void {
  localStore.write(KEY, p);
}

export function clearPending(key?: string): void {
  // A turn that ends clears only its own record (a newer reply may have replaced it).
  if (key !== undefined && readPending()?.key !== key) return;
  localStore.remove(KEY);
}
