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
  private readonly content = new ReplyText();

  constructor(private readonly out: SpecEventWriter) {}

  piece(kind: PieceKind, text: string): void {
    const delta = this.think.push(kind, text);
    if (delta === '') return;
    this.content.add(delta);
    this.out.token(delta);
  }

  flush(): void | Promise<void> {
    return this.out.flush();
  }

  end(ending: Ending): void {
    if (!ending.ok) return this.out.terminal({ type: 'error', message: ending.message });
    const tail = this.think.finish();
    if (tail !== '') {
      this.content.add(tail);
      this.out.token(tail);
    }
    this.out.terminal({ type: 'done', content: this.content.text() });
  }
}

/**
 * The reply so far, for `done.content`: UTF-16 code units in a buffer of its own (off the JS
 * heap) rather than a string grown by `+=`. Grown by `+=`, every delta stays alive for the
 * reply's life (its text and a rope node), and each young-generation scavenge copies every live
 * one: at 100 streams that was a large share of what scavenges copy, and their pauses are where
 * the per-token p99 waits (bench/NOTES.md, issue 28). UTF-16, not UTF-8: a lone surrogate a
 * provider sent comes back exactly as it was sent in its token event.
 */
export class ReplyText {
  private buf: Buffer | undefined;
  private bytes = 0;

  add(text: string): void {
    const need = this.bytes + text.length * 2;
    if (this.buf === undefined || need > this.buf.length) {
      // Not from Buffer's shared pool: a reply's buffer lives as long as the reply.
      const grown = Buffer.allocUnsafeSlow(Math.max(need, (this.buf?.length ?? 0) * 2, 512));
      this.buf?.copy(grown, 0, 0, this.bytes);
      this.buf = grown;
    }
    this.bytes += this.buf.write(text, this.bytes, 'utf16le');
  }

  text(): string {
    return this.buf === undefined ? '' : this.buf.toString('utf16le', 0, this.bytes);
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
