/**
 * A kept session's Changes (issue 38 item 9, with issue 40's keepConversations): what each file
 * held before the session's first write and after its last, in `<id>.changes.json` beside the
 * session's file, under the same rules. Its size counts in the session's cap: contents that
 * would pass it are left out, and those files are listed after a restart but cannot be undone.
 */
import { createHash } from 'node:crypto';

export type ChangeKind = 'created' | 'modified' | 'deleted';

/** A file as the session changed it: null is "no file there". */
export interface KeptChange {
  path: string;
  before: string | null;
  after: string | null;
}

/** A file whose contents were not kept: what it is listed as, and what it held after the session's last change (SHA-256 hex; null: no file). */
export interface LostChange {
  path: string;
  lost: { kind: ChangeKind; after: string | null; reason: string };
}

export type StoredChange = KeptChange | LostChange;

export interface StoredChanges {
  version: 1;
  id: string;
  files: StoredChange[];
}

export const TOO_LARGE_TO_KEEP = 'Its contents were too large to keep on the desktop across a restart (a session and its changes are kept up to 32 MiB), so Undo cannot put it back; restore it with git or by hand.';

export const changesFileOf = (id: string) => `${id}.changes.json`;

export const kindOf = (before: string | null, after: string | null): ChangeKind => (before === null ? 'created' : after === null ? 'deleted' : 'modified');
/** Lowercase hex SHA-256 of the text's UTF-8 bytes: what the phone signs an Undo over, and a kept file's fingerprint. */
export const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
export const digestOf = (text: string | null) => (text === null ? null : sha256Hex(text));

const isKind = (k: unknown) => k === 'created' || k === 'modified' || k === 'deleted';
const textOrNull = (v: unknown) => v === null || typeof v === 'string';

/** The record in a changes file; throws when it is not one of session `id`. */
export function parseChanges(text: string, id: string): StoredChanges {
  const c = JSON.parse(text) as StoredChanges;
  if (c?.version !== 1 || c.id !== id || !Array.isArray(c.files)) throw new Error('not an agent session\'s changes');
  for (const f of c.files as unknown[]) {
    const r = f as Record<string, unknown> & { lost?: Record<string, unknown> };
    const ok = typeof r?.path === 'string' && ('lost' in r ? isKind(r.lost?.kind) && textOrNull(r.lost?.after) && typeof r.lost?.reason === 'string' : textOrNull(r.before) && textOrNull(r.after));
    if (!ok) throw new Error('not an agent session\'s changes');
  }
  return c;
}

/**
 * The record as text of at most `room` bytes: past it, the largest files' contents go first
 * (listed, not undoable after a restart); undefined when even the list does not fit.
 */
export function fitChanges(c: StoredChanges, room: number): string | undefined {
  const files = [...c.files];
  // Sized once and kept up to date as contents go: the record can be 32 MiB, too much to write
  // out again for every file left out.
  let bytes = Buffer.byteLength(JSON.stringify(c));
  const largestFirst = files.map((f, i) => ({ f, i })).filter((e): e is { f: KeptChange; i: number } => !('lost' in e.f));
  largestFirst.sort((a, b) => weight(b.f) - weight(a.f) || a.i - b.i);
  for (const { f, i } of largestFirst) {
    if (bytes <= room) break;
    const lost: LostChange = { path: f.path, lost: { kind: kindOf(f.before, f.after), after: digestOf(f.after), reason: TOO_LARGE_TO_KEEP } };
    bytes += Buffer.byteLength(JSON.stringify(lost)) - Buffer.byteLength(JSON.stringify(f));
    files[i] = lost;
  }
  return bytes <= room ? JSON.stringify({ ...c, files }) : undefined;
}

const weight = (f: KeptChange) => (f.before?.length ?? 0) + (f.after?.length ?? 0);
