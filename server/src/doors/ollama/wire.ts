import type { FinishReason, PieceKind, ToolCall } from '../../providers/types';

/**
 * Ollama's wire format, as its Go server writes it (ollama/ollama api/types.go and
 * server/routes.go): one compact JSON object per line, keys in the Go structs' order, `<`, `>`
 * and `&` escaped as Go's encoding/json escapes them, `created_at` in UTC as RFC 3339 with
 * nanoseconds (trailing zeros trimmed), and `omitempty` fields left out when empty.
 */

/** JSON as Go's encoding/json writes it: HTML-sensitive characters and U+2028/U+2029 escaped. */
export function goJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** `time.Now().UTC()` as Go marshals it (RFC3339Nano): `2025-06-05T10:11:12.123456789Z`. */
export function goTime(ms: number = Date.now(), subMs: bigint = process.hrtime.bigint() % 1_000_000n): string {
  const iso = new Date(ms).toISOString(); // 2025-06-05T10:11:12.123Z
  const nanos = `${iso.slice(20, 23)}${subMs.toString().padStart(6, '0')}`.replace(/0+$/, '');
  return `${iso.slice(0, 19)}${nanos === '' ? '' : `.${nanos}`}Z`;
}

/** An error after the stream began, as Ollama ends it: `{"error":"…"}` on its own line. */
export function errorLine(message: string): string {
  return `${goJson({ error: message })}\n`;
}

/** `/api/chat` answers with `message`, `/api/generate` with `response`. */
export type Shape = 'chat' | 'generate';

/**
 * One reply in Ollama's shape: its lines while streaming, the metrics of its last line, and the
 * whole answer when not streaming. What the relay cannot know is left out, as Go leaves out
 * zero values: `load_duration`, `prompt_eval_count` and generate's `context` never appear.
 */
export class OllamaReply {
  private readonly started = process.hrtime.bigint();
  private firstPiece: bigint | undefined;
  private pieces = 0;
  private content = '';
  private thinking = '';
  /** The reply's tool calls so far: their `index`, and what the whole answer holds. */
  private readonly calls: ToolCall[] = [];

  constructor(
    readonly shape: Shape,
    readonly model: string,
  ) {}

  /** The line for one piece, counted for `eval_count`. */
  pieceLine(kind: PieceKind, text: string): string {
    this.count();
    return `${goJson(this.part(kind === 'reasoning' ? '' : text, kind === 'reasoning' ? text : '', { done: false }))}\n`;
  }

  /**
   * The line for one whole tool call, as Ollama streams it (server/routes.go ChatHandler): empty
   * content and `tool_calls` with the call's id and `function` {index, name, arguments}.
   */
  toolCallLine(call: ToolCall): string {
    this.calls.push(call);
    return `${goJson(this.part('', '', { done: false }, [call], this.calls.length - 1))}\n`;
  }

  /** Keeps a tool call for the answer that is sent whole. */
  keepToolCall(call: ToolCall): void {
    this.calls.push(call);
  }

  /** Keeps a piece for the answer that is sent whole (`"stream":false`). */
  keep(kind: PieceKind, text: string): void {
    this.count();
    if (kind === 'reasoning') this.thinking += text;
    else this.content += text;
  }

  /** The last line of a stream: empty content, `done`, how it ended, and the timings. */
  doneLine(finish: FinishReason): string {
    return `${goJson(this.part('', '', this.ending(finish)))}\n`;
  }

  /** The non-streamed answer: the last line with everything that was kept. */
  whole(finish: FinishReason): object {
    return this.part(this.content, this.thinking, this.ending(finish), this.calls, 0);
  }

  /** Ollama's answer to a request with nothing to generate: it loads (or unloads) the model and says so. */
  loaded(reason: 'load' | 'unload'): object {
    return this.part('', '', { done: true, done_reason: reason });
  }

  private count(): void {
    this.pieces++;
    this.firstPiece ??= process.hrtime.bigint();
  }

  private part(content: string, thinking: string, tail: Record<string, unknown>, calls: ToolCall[] = [], firstIndex = 0): object {
    const head: Record<string, unknown> = { model: this.model, created_at: goTime() };
    if (this.shape === 'chat') {
      const message: Record<string, unknown> = { role: 'assistant', content };
      if (thinking !== '') message.thinking = thinking;
      if (calls.length > 0) {
        message.tool_calls = calls.map((c, i) => ({ id: c.id, function: { index: firstIndex + i, name: c.name, arguments: c.arguments } }));
      }
      head.message = message;
    } else {
      head.response = content;
      if (thinking !== '') head.thinking = thinking;
    }
    return { ...head, ...tail };
  }

  /**
   * `done`, `done_reason` and the metrics the relay measures itself, in nanoseconds:
   * `total_duration` from the request to the end, `prompt_eval_duration` until the first piece
   * (it includes loading and the network), `eval_count` the pieces relayed (one per token for
   * most runners) and `eval_duration` from the first piece to the end.
   */
  private ending(finish: FinishReason): Record<string, unknown> {
    const now = process.hrtime.bigint();
    // Ollama ends a turn of tool calls with its ordinary "stop".
    const tail: Record<string, unknown> = { done: true, done_reason: finish === 'tool_calls' ? 'stop' : finish, total_duration: Number(now - this.started) };
    if (this.firstPiece !== undefined) {
      tail.prompt_eval_duration = Number(this.firstPiece - this.started);
      tail.eval_count = this.pieces;
      tail.eval_duration = Number(now - this.firstPiece);
    }
    // Go leaves out zero values (`omitempty`).
    for (const [key, value] of Object.entries(tail)) if (value === 0) delete tail[key];
    return tail;
  }
}
