/**
 * Numbered SSE frames held for replay after `Last-Event-ID` with the clients following live: the
 * capped FrameLog both the resumable door's reply log and the JSON event log build on, and that
 * JSON event log (an agent session's events, a kept conversation's, the conversation list's).
 */
/** One numbered event, already framed as `id: n\ndata: …\n\n`. */
export interface NumberedFrame {
  id: number;
  framed: string;
  bytes: number;
}

/**
 * The numbered, framed events of one stream, held for replay after `Last-Event-ID`, and the
 * clients listening live: the memory cap and the numbering both the resumable door's reply log
 * and the agent's session log keep. Past `capBytes` the oldest frames are dropped (the newest one
 * is always kept); `droppedThrough` tells a resume that needs one of them.
 */
export class FrameLog<F extends NumberedFrame, L extends { push(frame: F): void }> {
  protected readonly frames: F[] = [];
  protected held = 0;
  protected nextId = 1;
  /** Highest id no longer held (0: nothing dropped). */
  protected droppedThrough = 0;
  protected readonly listeners = new Set<L>();

  constructor(protected readonly capBytes: number) {}

  get lastId(): number {
    return this.nextId - 1;
  }

  /** Live frames from now on; call in the same tick as `since` so nothing falls between them. */
  listen(listener: L): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  protected keep(frame: F): void {
    this.frames.push(frame);
    this.held += frame.bytes;
    while (this.held > this.capBytes && this.frames.length > 1) {
      const old = this.frames.shift()!;
      this.held -= old.bytes;
      this.droppedThrough = old.id;
    }
    for (const listener of this.listeners) listener.push(frame);
  }
}

/** A client following a log's events live. */
export interface LogListener {
  push(frame: NumberedFrame): void;
  /** The log's owner is gone (deleted, dropped, the relay stopping): end the response. */
  close(): void;
}

export type LogReplay = { frames: NumberedFrame[]; missed?: string };

export const frameJsonEvent = (event: object, id: number) => `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`;

/**
 * The numbered events of one agent session (or kept conversation), for replay after
 * `Last-Event-ID`, and the clients listening live (the resumable door's EventLog, without a
 * terminal event: a session's stream stays open across turns). Memory is capped: past
 * `capBytes` the oldest events are dropped; a resume that needs one is told so, and the
 * session's snapshot still has the transcript.
 */
export class JsonEventLog<E extends object> extends FrameLog<NumberedFrame, LogListener> {
  /**
   * `owner` words a resume that missed events for the client: whose events they were ("a
   * session") and where the whole is ("GET the session for its whole transcript").
   */
  constructor(
    capBytes: number,
    private readonly owner: { of: string; whole: string },
  ) {
    super(capBytes);
  }

  /** Clients attached right now (a push goes out only when there are none). */
  get attached(): number {
    return this.listeners.size;
  }

  append(event: E): void {
    const id = this.nextId++;
    const framed = frameJsonEvent(event, id);
    this.keep({ id, framed, bytes: Buffer.byteLength(framed) });
  }

  /** The events after `after`; `missed` says when some were already dropped. */
  since(after: number): LogReplay {
    const frames = this.frames.filter((f) => f.id > after);
    if (after >= this.droppedThrough) return { frames };
    return {
      frames,
      missed: `Events ${after + 1} to ${this.droppedThrough} were dropped (the desktop keeps ${this.capBytes} bytes of ${this.owner.of}'s events); ${this.owner.whole}.`,
    };
  }

  /** The events held, with their ids (what a kept session saves). */
  entries(): { id: number; event: E }[] {
    return this.frames.map((f) => ({ id: f.id, event: JSON.parse(f.framed.slice(f.framed.indexOf('\ndata: ') + 7)) as E }));
  }

  /** A kept session's events read back, numbered as they were (ids before the first count as dropped). */
  restore(entries: readonly { id: number; event: E }[]): void {
    const first = entries[0]?.id ?? 1;
    this.nextId = first;
    this.droppedThrough = first - 1;
    for (const { event } of entries) this.append(event);
  }

  closeAll(): void {
    const all = [...this.listeners];
    this.listeners.clear();
    for (const listener of all) listener.close();
  }
}
