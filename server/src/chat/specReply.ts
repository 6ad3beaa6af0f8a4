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
    if (!ending.ok) {
      // The blocks go now, not whenever this object does (a request's state may outlive its reply).
      this.content.take();
      return this.out.terminal({ type: 'error', message: ending.message });
    }
    const tail = this.think.finish();
    if (tail !== '') {
      this.content.add(tail);
      this.out.token(tail);
    }
    this.out.terminal({ type: 'done', content: this.content.take() });
  }
}

/** The first block of a reply's text; each next one is twice the last, up to MAX_BLOCK. */
const FIRST_BLOCK = 512;
const MAX_BLOCK = 1024 * 1024;

/**
 * The reply so far, for `done.content`: UTF-8 in blocks of their own (off the JS heap) rather
 * than a string grown by `+=`. Grown by `+=`, every delta stays alive for the reply's life (its
 * text and a rope node), and each young-generation scavenge copies every live one: at 100
 * streams that was a large share of what scavenges copy, and their pauses are where the
 * per-token p99 waits (bench/NOTES.md, issue 28). Blocks, not one buffer grown by copying: a
 * long reply holds at most one block of slack and is never copied until its end. A piece UTF-8
 * cannot carry exactly (a lone surrogate) turns the rest of the reply into a plain string, so
 * `done.content` is always exactly the deltas sent.
 */
export class ReplyText {
  private readonly blocks: Buffer[] = [];
  /** Bytes used in the last block. */
  private used = 0;
  private plain: string | undefined;

  add(text: string): void {
    if (this.plain !== undefined) {
      this.plain += text;
      return;
    }
    if (!(text as string & { isWellFormed(): boolean }).isWellFormed()) {
      this.plain = this.text() + text;
      this.blocks.length = 0;
      return;
    }
    const bytes = Buffer.byteLength(text);
    let last = this.blocks[this.blocks.length - 1];
    if (last === undefined || this.used + bytes > last.length) {
      if (last !== undefined) this.blocks[this.blocks.length - 1] = last.subarray(0, this.used);
      // Not from Buffer's shared pool: a block lives as long as its reply.
      last = Buffer.allocUnsafeSlow(Math.max(bytes, last === undefined ? FIRST_BLOCK : Math.min(MAX_BLOCK, last.length * 2)));
      this.blocks.push(last);
      this.used = 0;
    }
    this.used += last.write(text, this.used);
  }

  /** The whole text; the blocks are let go, and the text starts again empty. */
  take(): string {
    const text = this.text();
    this.blocks.length = 0;
    this.used = 0;
    this.plain = undefined;
    return text;
  }

  private text(): string {
    if (this.plain !== undefined) return this.plain;
    const n = this.blocks.length;
    if (n === 0) return '';
    const last = this.blocks[n - 1].subarray(0, this.used);
    // A character may span two blocks' bytes only after they are joined: decode the whole.
    return n === 1 ? last.toString() : Buffer.concat([...this.blocks.slice(0, -1), last]).toString();
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
