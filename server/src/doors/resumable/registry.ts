import { createHash } from 'node:crypto';
import { CancelReason } from '../../chat/generation';
import { EventLog, type FrameListener } from './eventLog';

export const DEFAULT_RESUME_TTL_MS = 120_000;

/** One resumable generation: its events, who is listening, and when it may be forgotten. */
export class ResumableGeneration {
  readonly log: EventLog;
  /** Set while the provider runs; aborting it ends the generation. */
  controller: AbortController | undefined;
  private attached = 0;
  private timer: NodeJS.Timeout | undefined;
  private gone = false;

  constructor(
    readonly bodyHash: string,
    readonly providerId: string,
    capBytes: number,
    private readonly ttlMs: number,
    private readonly forget: () => void,
  ) {
    this.log = new EventLog(capBytes);
    this.idle();
  }

  /** A client listens from now on; returns its detach. Nobody listening for `ttlMs` ends and forgets the generation. */
  attach(listener: FrameListener): () => void {
    this.attached++;
    this.clearTimer();
    const stop = this.log.listen(listener);
    let detached = false;
    return () => {
      if (detached) return;
      detached = true;
      stop();
      if (--this.attached === 0) this.idle();
    };
  }

  /** The provider finished: stays replayable for `ttlMs` from now (or from its last client leaving). */
  finished(): void {
    this.controller = undefined;
    if (this.attached === 0 && !this.gone) this.idle();
  }

  dispose(): void {
    this.gone = true;
    this.clearTimer();
    this.controller?.abort(new CancelReason('The resumable generation was discarded.'));
  }

  private idle(): void {
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.gone = true;
      this.forget();
      // Abandoned while running: stop spending quota on a reply nobody will fetch.
      this.controller?.abort(new CancelReason('No client resumed the reply in time.'));
    }, this.ttlMs);
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
 */
export class ResumableRegistry {
  private readonly entries = new Map<string, ResumableGeneration>();

  constructor(
    private readonly ttlMs: number,
    private readonly capBytes: number,
  ) {}

  scope(token: string, key: string): string {
    return createHash('sha256').update(token).update('\0').update(key).digest('hex');
  }

  get(scope: string): ResumableGeneration | undefined {
    return this.entries.get(scope);
  }

  create(scope: string, bodyHash: string, providerId: string): ResumableGeneration {
    this.entries.get(scope)?.dispose();
    const entry: ResumableGeneration = new ResumableGeneration(bodyHash, providerId, this.capBytes, this.ttlMs, () => {
      if (this.entries.get(scope) === entry) this.entries.delete(scope);
    });
    this.entries.set(scope, entry);
    return entry;
  }

  get size(): number {
    return this.entries.size;
  }

  /** On stop: running generations were already ended by the stream registry; forget everything. */
  clear(): void {
    for (const entry of this.entries.values()) entry.dispose();
    this.entries.clear();
  }
}

export function hashBody(raw: Buffer): string {
  return createHash('sha256').update(raw).digest('hex');
}
