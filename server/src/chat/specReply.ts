import type { PieceKind } from '../providers/types';
import type { TerminalEvent } from './events';
import type { Ending, ReplySink } from './service';

/** What a SPEC-speaking door (SSE, resumable SSE, WebSocket) writes: framed by the door. */
export interface SpecEventWriter {
  token(delta: string): void;
  /** One provider read was written; a promise means the client is not keeping up. */
  flush(): void | Promise<void>;
  /** The one terminal event; the door ends its response with it. */
  terminal(event: TerminalEvent): void;
}

/**
 * A reply as SPEC events: reasoning wrapped in `<think>` (closed before the answer, and at the
 * end of a reply that finished inside it), never an empty delta, and `done.content` built from
 * exactly the deltas sent.
 */
export class SpecReply implements ReplySink {
  private readonly think = new ThinkWrapper();
  private content = '';

  constructor(private readonly out: SpecEventWriter) {}

  piece(kind: PieceKind, text: string): void {
    const delta = this.think.push(kind, text);
    if (delta === '') return;
    this.content += delta;
    this.out.token(delta);
  }

  flush(): void | Promise<void> {
    return this.out.flush();
  }

  end(ending: Ending): void {
    if (!ending.ok) return this.out.terminal({ type: 'error', message: ending.message });
    const tail = this.think.finish();
    if (tail !== '') {
      this.content += tail;
      this.out.token(tail);
    }
    this.out.terminal({ type: 'done', content: this.content });
  }
}

/**
 * Turns reasoning pieces into one `<think>…</think>` segment inside the text deltas, the
 * form SPEC §6 promises for every provider. Inline tags in answer text are left alone.
 */
export class ThinkWrapper {
  private open = false;

  /** The delta to send for this piece ('' when there is nothing to send). */
  push(kind: PieceKind, text: string): string {
    if (text === '') return '';
    if (kind === 'reasoning') {
      if (this.open) return text;
      this.open = true;
      return `<think>${text}`;
    }
    if (!this.open) return text;
    this.open = false;
    return `</think>${text}`;
  }

  /** Closes a segment the stream left open, so clients never see an unterminated tag. */
  finish(): string {
    if (!this.open) return '';
    this.open = false;
    return '</think>';
  }
}
