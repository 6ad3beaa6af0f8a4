import type { TerminalEvent } from '../../chat/events';
import { FrameLog, type NumberedFrame } from '../../streams/frameLog';
import { frameEvent, frameToken } from '../../http/writers';

/** One numbered event, already framed as `id: n\ndata: …\n\n`; the terminal one ends the reply. */
export interface Frame extends NumberedFrame {
  terminal: boolean;
}

/** A client following a generation live: frames pushed synchronously, then one flush per provider read. */
export interface FrameListener {
  push(frame: Frame): void;
  /** A promise means this client is not keeping up; the generation waits for it before reading on. */
  flush(): void | Promise<void>;
}

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
export class EventLog extends FrameLog<Frame, FrameListener> {
  get finished(): boolean {
    return this.frames.at(-1)?.terminal ?? false;
  }

  /** Bytes of framed events held for replay (what the registry's global budget counts). */
  get heldBytes(): number {
    return this.held;
  }

  appendToken(delta: string): void {
    if (this.finished) return;
    const id = this.nextId++;
    this.keepFramed(id, frameToken(delta, id), false);
  }

  appendTerminal(event: TerminalEvent): void {
    if (this.finished) return;
    const id = this.nextId++;
    this.keepFramed(id, frameEvent(event, id), true);
  }

  /** Every listener's flush; the wait for the slowest, if any is behind. */
  flush(): void | Promise<void> {
    let waits: Promise<void>[] | undefined;
    for (const listener of this.listeners) {
      const wait = listener.flush();
      if (wait) (waits ??= []).push(wait);
    }
    if (waits) return Promise.all(waits).then(() => undefined);
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

  private keepFramed(id: number, framed: string, terminal: boolean): void {
    this.keep({ id, framed, bytes: Buffer.byteLength(framed), terminal });
  }
}
