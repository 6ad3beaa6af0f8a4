import { readFileSync, renameSync } from 'node:fs';
import { open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger';
import type { AgentEvent } from '../protocol';
import type { ChatMessage } from '../providers/types';
import { changesFileOf, fitChanges, parseChanges, type StoredChange, type StoredChanges } from './agentChanges';
import { writePrivateFile } from './file';

/** What the desktop keeps of one agent session (docs/agent.md, "Sessions kept on the desktop"). */
export interface StoredAgentSession {
  version: 1;
  id: string;
  /** The folder's name (GET /v1/agent/folders). */
  folder: string;
  title: string;
  createdAt: number;
  updatedAt: number;
  /** As it was at the last write: `running` or `waiting` means the relay stopped during a turn. */
  status: string;
  /** The conversation as the model gets it. */
  messages: ChatMessage[];
  /** The snapshot's transcript. */
  transcript: unknown[];
  /** The numbered events held (the phone's replay). */
  events: { id: number; event: AgentEvent }[];
  /** Relay call ids of the approvals waiting at the last write. */
  pending: string[];
  instructions?: { file: string; text: string; cut: boolean };
  worktree?: { path: string; branch: string; project: string; into?: string };
  /** The relay's next call id number (`c<n>`), so ids stay unique in the session. */
  nextCall: number;
  /** The ACP agent running it (absent: DeskRelay's own), and what its engine needs to go on (its ACP session id). */
  agent?: string;
  engine?: Record<string, unknown>;
}

/** What lists a kept session without reading it whole: the first line of its file. */
export type KeptSummary = Pick<StoredAgentSession, 'version' | 'id' | 'folder' | 'title' | 'createdAt' | 'updatedAt' | 'status' | 'worktree' | 'agent' | 'engine'> & {
  /** The instructions file's name (the text is in the session). */
  instructions?: string;
};

/** A summary's first line is read in pieces of this size (a summary is a few hundred bytes). */
const HEAD_BYTES = 16 * 1024;

export const summaryOf = (s: StoredAgentSession): KeptSummary => ({
  version: 1,
  id: s.id,
  folder: s.folder,
  title: s.title,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
  status: s.status,
  ...(s.worktree ? { worktree: s.worktree } : {}),
  ...(s.agent ? { agent: s.agent } : {}),
  ...(s.engine ? { engine: s.engine } : {}),
  ...(s.instructions ? { instructions: s.instructions.file } : {}),
});

export interface AgentKeepBounds {
  /** Sessions kept; past it the least recently updated go. */
  count: number;
  /** One session's file at most; past it its oldest events are left out, then the session is not kept. */
  bytes: number;
}

export const DEFAULT_AGENT_KEEP_BOUNDS: AgentKeepBounds = { count: 200, bytes: 32 * 1024 * 1024 };

export const agentSessionsDir = (configDir: string) => join(configDir, 'agent-sessions');

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Agent sessions kept on the desktop (issue 40, with keepConversations): one file per session,
 * `<id>.json`, 0600 in a 0700 folder, written whole through a temp file and a rename (the
 * conversations' rules). Writes to one session are coalesced: at most one runs, and the next
 * takes the newest state, so a crash loses at most what changed since the last write. A file
 * is two lines: a small summary (what lists it), then the session; at start only the summaries
 * are read, a session whole when it is first used (load). A file that cannot be read is set
 * aside as `<id>.json.damaged` with a warning (at start, or when opened); the rest load.
 */
export class AgentSessionKeep {
  private readonly updated = new Map<string, number>();
  private readonly writing = new Map<string, Promise<void>>();
  /** By session id, and `<id>.changes` for its changes: the write to run next. */
  private readonly next = new Map<string, () => Promise<void>>();
  /** Each session's changes as last given, to fit them again when its file grows. */
  private readonly changes = new Map<string, () => StoredChange[]>();
  private stopped = false;
  /** Deleted: later changes (its stop as it closes) are not saved. */
  private readonly forgotten = new Set<string>();

  private constructor(
    readonly dir: string,
    private readonly bounds: AgentKeepBounds,
    private readonly logger: Logger,
  ) {}

  /** Sessions kept at most. */
  get count(): number {
    return this.bounds.count;
  }

  /** Reads every kept session's summary, newest first. */
  static async open(dir: string, logger: Logger, bounds: Partial<AgentKeepBounds> = {}): Promise<{ keep: AgentSessionKeep; sessions: KeptSummary[] }> {
    const keep = new AgentSessionKeep(dir, { ...DEFAULT_AGENT_KEEP_BOUNDS, ...bounds }, logger);
    let names: string[] = [];
    try {
      names = await readdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const sessions: KeptSummary[] = [];
    for (const name of names) {
      const id = name.endsWith('.json') ? name.slice(0, -5) : '';
      if (!ID.test(id)) continue;
      try {
        const s = JSON.parse(await firstLine(join(dir, name))) as KeptSummary;
        if (s.version !== 1 || s.id !== id || typeof s.updatedAt !== 'number' || typeof s.folder !== 'string') throw new Error('not an agent session');
        sessions.push(s);
        keep.updated.set(id, s.updatedAt);
      } catch (err) {
        // Its changes go aside with it: kept for whoever mends the session, not left to no one.
        await keep.setAside(name, err, changesFileOf(id));
      }
    }
    sessions.sort((a, b) => b.updatedAt - a.updatedAt);
    for (const old of sessions.splice(keep.bounds.count)) await keep.unlink(old.id);
    return { keep, sessions };
  }

  /**
   * A kept session read whole, on its first use after a restart; undefined when its file cannot
   * be read (then set aside with a warning). Synchronous: the door and the editor's view ask
   * for a session synchronously, and parsing the JSON blocks as long as reading it would.
   */
  load(id: string): StoredAgentSession | undefined {
    const name = `${id}.json`;
    try {
      const text = readFileSync(join(this.dir, name), 'utf8');
      const s = JSON.parse(text.slice(text.indexOf('\n') + 1)) as StoredAgentSession;
      if (s.version !== 1 || s.id !== id || !Array.isArray(s.messages) || !Array.isArray(s.transcript) || !Array.isArray(s.events) || !Array.isArray(s.pending)) throw new Error('not an agent session');
      return s;
    } catch (err) {
      for (const file of [name, changesFileOf(id)]) {
        try {
          renameSync(join(this.dir, file), join(this.dir, `${file}.damaged`));
        } catch {
          // gone meanwhile (or the session changed nothing): nothing to set aside
        }
      }
      this.updated.delete(id);
      this.warnAside(name, err);
      return undefined;
    }
  }

  /** `name` (and the files that go with it) renamed to `<file>.damaged`, with a warning. */
  private async setAside(name: string, err: unknown, ...along: string[]): Promise<void> {
    for (const file of [name, ...along]) await rename(join(this.dir, file), join(this.dir, `${file}.damaged`)).catch(() => {});
    this.warnAside(name, err);
  }

  private warnAside(name: string, err: unknown): void {
    this.logger.warn(`agent sessions: ${name} could not be read (${err instanceof Error ? err.message : 'unreadable'}); set aside as ${name}.damaged`);
  }

  /** Saves the session's state (taken when the write starts, so a burst of changes is one write). */
  save(id: string, state: () => StoredAgentSession): void {
    this.queue(id, id, () => this.write(state()));
  }

  /** Saves the session's changes (`<id>.changes.json`), in the room its session file leaves. */
  saveChanges(id: string, files: () => StoredChange[]): void {
    if (this.stopped || this.forgotten.has(id)) return;
    this.changes.set(id, files);
    this.queue(id, `${id}.changes`, () => this.writeChanges(id, files()));
  }

  /** The session's changes as kept; undefined when none are, or their file cannot be read (then set aside with a warning). */
  async loadChanges(id: string): Promise<StoredChanges | undefined> {
    const name = changesFileOf(id);
    let text: string;
    try {
      text = await readFile(join(this.dir, name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      await this.setAside(name, err);
      return undefined;
    }
    try {
      return parseChanges(text, id);
    } catch (err) {
      await this.setAside(name, err);
      return undefined;
    }
  }

  /** Runs `write` for `key`, at most one at a time: a burst of changes is one write of the newest state. */
  private queue(id: string, key: string, write: () => Promise<void>): void {
    if (this.stopped || this.forgotten.has(id)) return;
    this.next.set(key, write);
    if (this.writing.has(key)) return;
    const run = (async () => {
      for (let take = this.next.get(key); take && !this.stopped; take = this.next.get(key)) {
        this.next.delete(key);
        await take().catch((err: unknown) => this.logger.warn(`agent sessions: could not save ${key.slice(0, 8)} (${(err as NodeJS.ErrnoException).code ?? 'error'})`));
      }
    })().finally(() => this.writing.delete(key));
    this.writing.set(key, run);
  }

  /** Deletes the session's files, after writes under way, and saves it no more. */
  async remove(id: string): Promise<void> {
    this.forgotten.add(id);
    this.next.delete(id);
    this.next.delete(`${id}.changes`);
    await this.writing.get(id);
    await this.writing.get(`${id}.changes`);
    await this.unlink(id);
  }

  private async unlink(id: string): Promise<void> {
    this.updated.delete(id);
    this.changes.delete(id);
    await rm(join(this.dir, `${id}.json`), { force: true });
    await rm(join(this.dir, changesFileOf(id)), { force: true });
  }

  private async writeChanges(id: string, files: StoredChange[]): Promise<void> {
    if (this.forgotten.has(id)) return;
    const path = join(this.dir, changesFileOf(id));
    if (files.length === 0) return void (await rm(path, { force: true }));
    const session = await stat(join(this.dir, `${id}.json`)).then((s) => s.size, () => 0);
    const text = fitChanges({ version: 1, id, files }, this.bounds.bytes - session);
    if (text === undefined) {
      this.logger.warn(`agent sessions: ${id.slice(0, 8)}'s changes do not fit in ${this.bounds.bytes} bytes beside the session and are not kept`);
      return void (await rm(path, { force: true }));
    }
    await writePrivateFile(path, text);
  }

  /** Waits for the writes under way, then takes no more: a stopping relay's own stop is not saved over the state it stopped in. */
  async close(): Promise<void> {
    while (this.writing.size > 0) await Promise.all([...this.writing.values()]);
    this.stopped = true;
  }

  private async write(s: StoredAgentSession): Promise<void> {
    const head = `${JSON.stringify(summaryOf(s))}\n`;
    let text = head + JSON.stringify(s);
    // Too big: the oldest events go first (the transcript keeps what was said and done).
    while (Buffer.byteLength(text) > this.bounds.bytes && s.events.length > 0) {
      s = { ...s, events: s.events.slice(Math.ceil(s.events.length / 2)) };
      text = head + JSON.stringify(s);
    }
    if (Buffer.byteLength(text) > this.bounds.bytes) {
      this.logger.warn(`agent sessions: ${s.id.slice(0, 8)} is past ${this.bounds.bytes} bytes and is no longer kept`);
      this.forgotten.add(s.id);
      await this.unlink(s.id);
      return;
    }
    if (!this.updated.has(s.id) && this.updated.size >= this.bounds.count) {
      const oldest = [...this.updated].sort((a, b) => a[1] - b[1])[0]![0];
      this.logger.info(`agent sessions: ${oldest.slice(0, 8)} deleted (the desktop keeps ${this.bounds.count})`);
      this.forgotten.add(oldest);
      this.next.delete(oldest);
      this.next.delete(`${oldest}.changes`);
      await this.unlink(oldest);
    }
    this.updated.set(s.id, s.updatedAt);
    await writePrivateFile(join(this.dir, `${s.id}.json`), text);
    // The session's file grew into its changes' room: they are fitted again.
    const changes = this.changes.get(s.id);
    const kept = await stat(join(this.dir, changesFileOf(s.id))).then((c) => c.size, () => 0);
    if (changes && Buffer.byteLength(text) + kept > this.bounds.bytes) this.saveChanges(s.id, changes);
  }
}

/** A file's first line (without reading the rest); the whole file when it has no line break. */
async function firstLine(path: string): Promise<string> {
  const file = await open(path, 'r');
  try {
    const pieces: Buffer[] = [];
    for (let at = 0; ; ) {
      const buf = Buffer.alloc(HEAD_BYTES);
      const { bytesRead } = await file.read(buf, 0, HEAD_BYTES, at);
      const chunk = buf.subarray(0, bytesRead);
      const nl = chunk.indexOf(10);
      // Joined before decoding: a character split between two reads stays whole.
      if (bytesRead === 0 || nl >= 0) return Buffer.concat([...pieces, nl >= 0 ? chunk.subarray(0, nl) : chunk]).toString('utf8');
      pieces.push(chunk);
      at += bytesRead;
    }
  } finally {
    await file.close();
  }
}
