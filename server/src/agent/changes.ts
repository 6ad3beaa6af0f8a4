/**
 * A change's diff and the session's Changes, in one place: the diff an approval card shows is the
 * diff the Changes view lists and Undo's digest is taken over, so they are made by one hand.
 *
 * A session's changes to its folder, file by file (issue 38): what each file held before the
 * session's first write to it and after its last, recorded as the session's workspace writes
 * (DeskRelay's own tools and an ACP agent's writes alike), whatever host it runs on, and, in a
 * git folder, as what each approved command changed (commandChanges). The phone's
 * Changes view lists them as one diff and takes a file back (Undo) only while the file is still
 * exactly as the session left it.
 */
import type { AgentFileChange } from '../protocol';
import { digestOf, sha256Hex, type ChangeKind, type StoredChange, type StoredChanges } from '../store/agentChanges';
import { WorkspaceError, type CommandOptions, type CommandResult, type Workspace } from './workspace';
import type { AgentSessionKeep } from '../store/agentSessions';
import { beforeCommand } from './commandChanges';
import { silentLogger, type Logger } from '../logger';

/**
 * A unified diff (`diff -u` form, 3 lines of context) of two texts, for the approval a phone
 * shows before an edit. Line-based Myers (O((N+M)·D)); past MAX_EDIT_DISTANCE differing lines
 * the whole old text is shown as replaced, which stays correct, only less compact.
 */
const CONTEXT = 3;
const MAX_EDIT_DISTANCE = 4000;

type Op = { kind: ' ' | '-' | '+'; line: string };

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function myers(a: string[], b: string[]): Op[] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    const next = v.slice();
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      next[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, d, offset);
    }
    v = next;
  }
  return undefined;
}

function backtrack(trace: Int32Array[], a: string[], b: string[], dEnd: number, offset: number): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = dEnd; d > 0; d--) {
    const v = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? k + 1 : k - 1;
    const prevX = v[offset + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push({ kind: ' ', line: a[--x]! });
      y--;
    }
    if (x === prevX) ops.push({ kind: '+', line: b[--y]! });
    else ops.push({ kind: '-', line: a[--x]! });
  }
  while (x > 0 && y > 0) {
    ops.push({ kind: ' ', line: a[--x]! });
    y--;
  }
  return ops.reverse();
}

/** The unified diff turning `before` into `after`; '' when they are equal. `before` undefined: a new file. */
export function unifiedDiff(path: string, before: string | undefined, after: string): string {
  if (before === after) return '';
  const a = splitLines(before ?? '');
  const b = splitLines(after);
  const ops = myers(a, b) ?? [...a.map((line): Op => ({ kind: '-', line })), ...b.map((line): Op => ({ kind: '+', line }))];
  const out = [before === undefined ? '--- /dev/null' : `--- a/${path}`, `+++ b/${path}`];
  // Hunks: runs of changes with up to CONTEXT unchanged lines around, merged when close.
  let i = 0;
  while (i < ops.length) {
    while (i < ops.length && ops[i]!.kind === ' ') i++;
    if (i >= ops.length) break;
    let start = Math.max(0, i - CONTEXT);
    let end = i;
    for (;;) {
      while (end < ops.length && ops[end]!.kind !== ' ') end++;
      let same = end;
      while (same < ops.length && ops[same]!.kind === ' ') same++;
      if (same < ops.length && same - end <= 2 * CONTEXT) end = same;
      else {
        end = Math.min(ops.length, end + CONTEXT);
        break;
      }
    }
    let oldLine = 1;
    let newLine = 1;
    for (let j = 0; j < start; j++) {
      if (ops[j]!.kind !== '+') oldLine++;
      if (ops[j]!.kind !== '-') newLine++;
    }
    const hunk = ops.slice(start, end);
    const oldCount = hunk.filter((o) => o.kind !== '+').length;
    const newCount = hunk.filter((o) => o.kind !== '-').length;
    out.push(`@@ -${oldCount === 0 ? oldLine - 1 : oldLine},${oldCount} +${newCount === 0 ? newLine - 1 : newLine},${newCount} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    i = end;
    start = end;
  }
  let text = `${out.join('\n')}\n`;
  if (before !== undefined && before !== '' && !before.endsWith('\n')) text += '\\ No newline at end of file (before)\n';
  if (after !== '' && !after.endsWith('\n')) text += '\\ No newline at end of file\n';
  return text;
}

/**
 * The text before a change, from the text after it and the change's unified diff (as made
 * above): what the desk's diff editor shows on the left for an edit the agent applied. Undefined
 * when `after` no longer matches the diff (the file changed since).
 */
export function reverseDiff(diff: string, after: string): string | undefined {
  const b = splitLines(after);
  const out: string[] = [];
  let at = 0; // next line of `after` not yet copied
  let beforeHasNewline = true;
  for (const line of diff.split('\n')) {
    if (line.startsWith('\\ No newline at end of file (before)')) beforeHasNewline = false;
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (hunk) {
      const start = Number(hunk[1]) - (hunk[2] === '0' ? 0 : 1);
      if (start < at || start > b.length) return undefined;
      out.push(...b.slice(at, start));
      at = start;
      continue;
    }
    if (line.startsWith('---') || line.startsWith('+++') || line.startsWith('\\') || line === '') continue;
    const kind = line[0];
    const text = line.slice(1);
    if (kind === '+' || kind === ' ') {
      if (b[at] !== text) return undefined;
      at++;
      if (kind === ' ') out.push(text);
    } else if (kind === '-') out.push(text);
  }
  out.push(...b.slice(at));
  if (diff.startsWith('--- /dev/null')) return '';
  return out.length === 0 ? '' : `${out.join('\n')}${beforeHasNewline ? '\n' : ''}`;
}

/** One file as the session changed it: undefined is "no file there". */
interface Tracked {
  before: string | undefined;
  after: string | undefined;
  /** Kept without its contents (too large) and read back after a restart: listed, not undoable. */
  lost?: { kind: ChangeKind; after: string | null; reason: string };
}

/** Where a kept session's changes are read from and saved to (AgentSessionKeep, with keepConversations). */
export interface ChangesKept {
  load(): Promise<StoredChanges | undefined>;
  save(files: () => StoredChange[]): void;
}

const orNull = (text: string | undefined) => (text === undefined ? null : text);
const orUndefined = (text: string | null) => (text === null ? undefined : text);

/** The file is not as the session left it (409 agent.changed_outside). */
export class ChangedOutsideError extends Error {}

/** The session changed no such file, or it is already back (404 agent.not_found). */
export class NotChangedError extends Error {}

/** A session's files are tracked up to this many, and this much text held; later files are written, not listed. */
export const MAX_TRACKED_FILES = 500;
export const MAX_TRACKED_CHARS = 32 * 1024 * 1024;

/** A folder-relative path as the tools and the phone may spell it, in one form. */
export const normalPath = (path: string) => path.replace(/\\/g, '/').replace(/^(\.\/)+/, '');
const size = (t: Tracked) => (t.before?.length ?? 0) + (t.after?.length ?? 0);

export class SessionChanges {
  private readonly files = new Map<string, Tracked>();
  private chars = 0;
  private loaded: Promise<void> | undefined;
  /** What the session works in: `inner` with every write recorded. */
  readonly workspace: Workspace;

  constructor(
    private readonly inner: Workspace,
    private readonly kept?: ChangesKept,
    private readonly logger: Logger = silentLogger,
  ) {
    const own: Record<string | symbol, unknown> = Object.assign(Object.create(null) as object, {
      writeFile: (path: string, content: string) => this.write(path, content),
      runCommand: (command: string, options: CommandOptions) => this.run(command, options),
      ...(inner.removeFile ? { removeFile: (path: string) => this.remove(path) } : {}),
    });
    this.workspace = new Proxy(inner, {
      get(target, prop) {
        if (Object.hasOwn(own, prop)) return own[prop];
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  private write(path: string, content: string): Promise<void | string> {
    return this.record(path, content, () => this.inner.writeFile(path, content));
  }

  private remove(path: string): Promise<void> {
    return this.record(path, undefined, () => this.inner.removeFile!(path));
  }

  private room(): boolean {
    return this.files.size < MAX_TRACKED_FILES && this.chars < MAX_TRACKED_CHARS;
  }

  /** Runs the command, then records what it changed (a git folder's; nothing elsewhere or when git fails), whatever its end. */
  private async run(command: string, options: CommandOptions): Promise<CommandResult> {
    const changed = await beforeCommand(this.inner, (m) => this.logger.warn(`agent changes: ${m}`)).catch(() => undefined);
    try {
      return await this.inner.runCommand(command, options);
    } finally {
      if (changed) await this.recordCommand(changed).catch(() => {});
    }
  }

  private async recordCommand(changed: NonNullable<Awaited<ReturnType<typeof beforeCommand>>>): Promise<void> {
    await this.ready();
    // A file the session already changed keeps its first `before`; a new one is taken while there is room.
    await changed({ wants: (path) => this.files.has(normalPath(path)) || this.room(), take: (c) => this.record(c.path, c.after, () => Promise.resolve(), c) });
  }

  /** The kept changes, read back on first use after a restart. */
  private ready(): Promise<void> {
    this.loaded ??= (async () => {
      for (const f of (await this.kept?.load())?.files ?? []) {
        const t: Tracked = 'lost' in f ? { before: undefined, after: undefined, lost: f.lost } : { before: orUndefined(f.before), after: orUndefined(f.after) };
        this.files.set(normalPath(f.path), t);
        this.chars += size(t);
      }
    })();
    return this.loaded;
  }

  private saved(): void {
    this.kept?.save(() => [...this.files].map(([path, t]): StoredChange => (t.lost ? { path, lost: t.lost } : { path, before: orNull(t.before), after: orNull(t.after) })));
  }

  /** `given`: what was there before, known (a command's change, already made); else read now, before `change`. */
  private async record<T>(path: string, after: string | undefined, change: () => Promise<T>, given?: { before: string | undefined }): Promise<T> {
    await this.ready();
    const key = normalPath(path);
    const known = this.files.get(key);
    // Not readable (too large, binary): changed, but not something Undo could put back.
    const before = known ? known : !this.room() ? undefined : (given ?? (await this.inner.readIfExists(path).then((t) => ({ before: t }), () => undefined)));
    const result = await change();
    if (known) {
      this.chars -= size(known);
      known.after = after;
      if (known.lost) known.lost.after = digestOf(orNull(after));
      this.chars += size(known);
    } else if (before) {
      const t = { before: before.before, after };
      this.files.set(key, t);
      this.chars += size(t);
    }
    this.saved();
    return result;
  }

  /** The files the session changed, in the order first changed; a file back as it was is left out. */
  async list(): Promise<AgentFileChange[]> {
    await this.ready();
    const out: AgentFileChange[] = [];
    for (const [path, t] of this.files) {
      if (t.lost) {
        const now = await this.inner.readIfExists(path).then((text) => digestOf(orNull(text)), () => 'unreadable');
        out.push({ path, kind: t.lost.kind, diff: '', digest: sha256Hex(''), changedOutside: now !== t.lost.after, notUndoable: t.lost.reason });
        continue;
      }
      if (t.before === t.after) continue;
      const now = await this.inner.readIfExists(path).catch(() => null);
      const diff = unifiedDiff(path, t.before, t.after ?? '');
      out.push({ path, kind: t.before === undefined ? 'created' : t.after === undefined ? 'deleted' : 'modified', diff, digest: sha256Hex(diff), changedOutside: now !== t.after });
    }
    return out;
  }

  /**
   * Puts the file back as it was before the session's first change to it: a file the session
   * made is removed, one it removed is made again. Refused (ChangedOutsideError) when the file is
   * no longer exactly as the session's last change left it; `digest` must be that of the diff
   * listed now (what the phone showed and signed).
   */
  async undo(path: string, digest: string): Promise<void> {
    await this.ready();
    const key = normalPath(path);
    const t = this.files.get(key);
    if (t?.lost) throw new WorkspaceError(`${key}: ${t.lost.reason}`);
    if (!t || t.before === t.after) throw new NotChangedError();
    if (sha256Hex(unifiedDiff(key, t.before, t.after ?? '')) !== digest) throw new ChangedOutsideError();
    const now = await this.inner.readIfExists(key).catch(() => null);
    if (now !== t.after) throw new ChangedOutsideError();
    // What the session's file is now (`after`) goes; what was there before comes back.
    if (t.before !== undefined) await this.inner.writeFile(key, t.before);
    else if (this.inner.removeFile) await this.inner.removeFile(key);
    else throw new WorkspaceError(`This desktop cannot remove files; delete ${key} by hand.`);
    this.files.delete(key);
    this.chars -= size(t);
    this.saved();
  }

}

/** Every session's changes, by session id (the agent door's). */
export class ChangesBook {
  private readonly sessions = new Map<string, SessionChanges>();
  private kept: AgentSessionKeep | undefined;

  constructor(private readonly logger: Logger = silentLogger) {}

  /** From now on, each session's changes are kept with it on the desktop (keepConversations). */
  keepWith(kept: AgentSessionKeep): void {
    this.kept = kept;
  }

  /** `workspace` with its writes recorded for the session `id`. */
  track(id: string, workspace: Workspace): Workspace {
    const kept = this.kept;
    const changes = new SessionChanges(workspace, kept && { load: () => kept.loadChanges(id), save: (files) => kept.saveChanges(id, files) }, this.logger);
    this.sessions.set(id, changes);
    return changes.workspace;
  }

  of(id: string): SessionChanges | undefined {
    return this.sessions.get(id);
  }

  /** Forgets every session `alive` does not know (deleted, dropped). */
  prune(alive: (id: string) => boolean): void {
    for (const id of [...this.sessions.keys()]) if (!alive(id)) this.sessions.delete(id);
  }
}
