import type { PieceKind } from '../providers/types';

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
