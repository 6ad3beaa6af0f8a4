import { frameEvent, type StreamEvent } from '../../http/sse';

/** One numbered event, already framed as `id: n\ndata: …\n\n`. */
export interface Frame {
  id: number;
  framed: string;
  bytes: number;
  terminal: boolean;
}

export type FrameListener = (frame: Frame) => void | Promise<void>;

export type Replay = { ok: true; frames: Frame[] } | { ok: false; message: string };

export const DEFAULT_RESUME_BUFFER_BYTES = 1024 * 1024;

/**
 * The numbered events of one resumable generation, for replay, plus the clients listening live.
 *
 * Memory is capped: when the framed bytes held exceed `capBytes`, the oldest events are dropped
 * (the newest one is always kept). A resume that needs a dropped event cannot be served faithfully
 * (the deltas would have a hole), so `since` refuses it and the caller ends that response with a
 * terminal error event. The cap counts every buffered event, the `done` event (the whole reply
 * again) included.
 */
export class EventLog {
  private readonly frames: Frame[] = [];
  private held = 0;
  private nextId = 1;
  /** Highest id no longer held (0: nothing dropped). */
  private droppedThrough = 0;
  private readonly listeners = new Set<FrameListener>();

  constructor(private readonly capBytes: number) {}

  get lastId(): number {
    return this.nextId - 1;
  }

  get finished(): boolean {
    return this.frames.at(-1)?.terminal ?? false;
  }

  /** Numbers and keeps the event and hands it to every listener; a promise means a listener is not keeping up. */
  append(event: StreamEvent): void | Promise<void> {
    if (this.finished) return;
    const id = this.nextId++;
    const framed = frameEvent(event, id);
    const frame: Frame = { id, framed, bytes: Buffer.byteLength(framed), terminal: event.type !== 'token' };
    this.frames.push(frame);
    this.held += frame.bytes;
    while (this.held > this.capBytes && this.frames.length > 1) {
      const old = this.frames.shift()!;
      this.held -= old.bytes;
      this.droppedThrough = old.id;
    }
    const waits: Promise<void>[] = [];
    for (const listener of [...this.listeners]) {
      const wait = listener(frame);
      if (wait) waits.push(wait);
    }
    if (waits.length > 0) return Promise.all(waits).then(() => undefined);
  }

  /**
   * The events after `after`. A client that already saw the terminal event gets it again, so
   * every response still ends with exactly one terminal event.
   */
  since(after: number): Replay {
    if (after < this.droppedThrough) {
      return {
        ok: false,
        message:
          `Cannot resume after event ${after}: the desktop keeps at most ${this.capBytes} bytes of a reply's events and ` +
          `events up to ${this.droppedThrough} were dropped. Send the message again with a new Idempotency-Key.`,
      };
    }
    const frames = this.frames.filter((f) => f.id > after);
    if (frames.length === 0 && this.finished) frames.push(this.frames.at(-1)!);
    return { ok: true, frames };
  }

  /** Live frames from now on; call in the same tick as `since` so nothing falls between them. */
  listen(listener: FrameListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
