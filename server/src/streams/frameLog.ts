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
