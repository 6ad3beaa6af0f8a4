import { createHash } from 'node:crypto';
import { CancelReason } from '../../chat/events';
import type { ChatHandle } from '../../chat/service';
import { EventLog, type FrameListener } from './eventLog';

export const DEFAULT_RESUME_TTL_MS = 120_000;
/** A reply that ended in an error is rarely resumed for long: it is kept for less. */
export const DEFAULT_RESUME_ERROR_TTL_MS = 30_000;

/** What all resumable generations together may hold; past it the oldest finished ones are forgotten first. */
export interface ResumeBudget {
  bytes: number;
  entries: number;
}

/** Clients following one generation at once (issue 21, finding 3); a newer one displaces the oldest. */
export const MAX_ATTACHED = 4;

export const DEFAULT_RESUME_BUDGET: ResumeBudget = { bytes: 64 * 1024 * 1024, entries: 256 };

/** One resumable generation: its events, who is listening, and when it may be forgotten. */
export class ResumableGeneration {
  readonly log: EventLog;
  /** Set while the provider runs; aborting it ends the generation. */
  chat: ChatHandle | undefined;
  /** Clients following this generation, oldest first. */
  private readonly following: { detach(): void; evict(): void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private gone = false;
  private lifeMs: number;

  /** How long the reply stays replayable once finished (shorter after an error). */
  get replayableMs(): number {
    return this.lifeMs;
  }
  private ended = false;
  /** Set by the registry that holds this generation. */
  forget: () => void = () => {};

  constructor(
    readonly bodyHash: string,
    readonly providerId: string,
    capBytes: number,
    private readonly ttlMs: number,
    private readonly errorTtlMs: number = ttlMs,
  ) {
    this.log = new EventLog(capBytes);
    this.lifeMs = ttlMs;
    this.idle();
  }

  /** Clients listening now (0: nobody is connected to this generation). */
  get clients(): number {
    return this.following.length;
  }

  /** The provider finished; finished generations are the ones a budget may evict. */
  get finished(): boolean {
    return this.ended;
  }

  /**
   * A client listens from now on; returns its detach. Nobody listening for the TTL ends and
   * forgets the generation. At most MAX_ATTACHED clients follow one generation: a newer one
   * displaces the oldest (`evict` ends its response), since a phone that reconnects leaves dead
   * connections behind it that must not lock it out, and each client may hold a replay in flight.
   */
  attach(listener: FrameListener, evict: () => void = () => {}): () => void {
    this.clearTimer();
    const stop = this.log.listen(listener);
    let detached = false;
    const client = {
      evict,
      detach: () => {
        if (detached) return;
        detached = true;
        stop();
        const at = this.following.indexOf(client);
        if (at !== -1) this.following.splice(at, 1);
        if (this.following.length === 0 && !this.gone) this.idle();
      },
    };
    this.following.push(client);
    while (this.following.length > MAX_ATTACHED) {
      const oldest = this.following[0];
      oldest.detach();
      oldest.evict();
    }
    return client.detach;
  }

  /** The provider finished: stays replayable for the TTL from now (or from its last client leaving); less after an error. */
  finish(ok: boolean): void {
    this.chat = undefined;
    this.ended = true;
    if (!ok) this.lifeMs = Math.min(this.ttlMs, this.errorTtlMs);
    if (this.following.length === 0 && !this.gone) this.idle();
  }

  dispose(): void {
    this.gone = true;
    this.clearTimer();
    this.chat?.abort(new CancelReason('The resumable generation was discarded.'));
  }

  private idle(): void {
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.gone = true;
      this.forget();
      // Abandoned while running: stop spending quota on a reply nobody will fetch.
      this.chat?.abort(new CancelReason('No client resumed the reply in time.'));
    }, this.lifeMs);
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * Resumable generations by client key. Keys are scoped to the token in force: the scope is a
 * digest of token and key, so a rotated token cannot reach old generations and no token is kept.
 * Besides each generation's own cap, all of them together stay within a budget of bytes and
 * entries: finished generations are forgotten oldest first (a resume of one starts afresh, as
 * an expired key does). Running ones are bounded by the concurrency limit.
 */
export class ResumableRegistry {
  private readonly entries = new Map<string, ResumableGeneration>();

  constructor(
    private readonly ttlMs: number,
    private readonly capBytes: number,
    private readonly budget: ResumeBudget = DEFAULT_RESUME_BUDGET,
    private readonly errorTtlMs: number = DEFAULT_RESUME_ERROR_TTL_MS,
  ) {}

  scope(token: string, key: string): string {
    return createHash('sha256').update(token).update('\0').update(key).digest('hex');
  }

  get(scope: string): ResumableGeneration | undefined {
    return this.entries.get(scope);
  }

  /** A generation not yet held: the door starts its chat first (which may be refused), then adds it. */
  prepare(bodyHash: string, providerId: string): ResumableGeneration {
    return new ResumableGeneration(bodyHash, providerId, this.capBytes, this.ttlMs, this.errorTtlMs);
  }

  add(scope: string, entry: ResumableGeneration): ResumableGeneration {
    this.entries.get(scope)?.dispose();
    entry.forget = () => {
      if (this.entries.get(scope) === entry) this.entries.delete(scope);
    };
    // Re-inserted at the end: the map's order is the age order eviction follows.
    this.entries.delete(scope);
    this.entries.set(scope, entry);
    this.enforceBudget();
    return entry;
  }

  create(scope: string, bodyHash: string, providerId: string): ResumableGeneration {
    return this.add(scope, this.prepare(bodyHash, providerId));
  }

  /** Forgets the oldest finished generations until the budget holds again. */
  enforceBudget(): void {
    let bytes = 0;
    for (const entry of this.entries.values()) bytes += entry.log.heldBytes;
    for (const [scope, entry] of this.entries) {
      if (bytes <= this.budget.bytes && this.entries.size <= this.budget.entries) return;
      if (!entry.finished) continue;
      bytes -= entry.log.heldBytes;
      this.entries.delete(scope);
      entry.dispose();
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** Bytes all held generations keep for replay. */
  get heldBytes(): number {
    let bytes = 0;
    for (const entry of this.entries.values()) bytes += entry.log.heldBytes;
    return bytes;
  }

  /** On stop: running generations were already ended by the chat service; forget everything. */
  clear(): void {
    for (const entry of this.entries.values()) entry.dispose();
    this.entries.clear();
  }
}

export function hashBody(raw: Buffer): string {
  return createHash('sha256').update(raw).digest('hex');
}
