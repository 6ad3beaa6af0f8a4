import { randomBytes } from 'node:crypto';
import type { FinishReason, PieceKind, ProviderConfig, ToolCall } from '../../providers/types';

/**
 * The shapes OpenAI's chat completions API answers with. Reasoning goes out separately as
 * `reasoning_content` (DeepSeek's and LM Studio's field, which OpenAI-style clients read), not
 * wrapped in `<think>` as on the SPEC stream.
 */

/**
 * The model the desktop serves, whatever the client asked for, as configured; a completion
 * names the model that really answered once the adapter resolved it (`auto` → the runner's first).
 */
export function modelName(provider: ProviderConfig): string {
  return provider.model ?? 'auto';
}

export class Completion {
  readonly id = `chatcmpl-${randomBytes(12).toString('hex')}`;
  readonly created = Math.floor(Date.now() / 1000);
  private content = '';
  private reasoning = '';
  /** The calls of the reply, in order: their index in `tool_calls`, and what the non-stream answer holds. */
  private readonly calls: ToolCall[] = [];

  /** Set to the resolved model once the adapter names it; every chunk after that carries it. */
  constructor(public model: string) {}

  /** Stream framing: the first chunk announces the assistant role, as OpenAI's does. */
  firstChunk(): string {
    return this.chunk({ role: 'assistant', content: '' }, null);
  }

  /** The chunk for one piece ('' for an empty piece). */
  pieceChunk(kind: PieceKind, text: string): string {
    if (text === '') return '';
    return kind === 'reasoning' ? this.chunk({ reasoning_content: text }, null) : this.chunk({ content: text }, null);
  }

  /**
   * A whole tool call as OpenAI streams one (API reference, "The chat completion chunk object",
   * choices[].delta.tool_calls[]): a first chunk with the call's index, id, type and name and empty
   * arguments, then a chunk with the arguments (OpenAI sends them in fragments; one is allowed).
   */
  toolCallChunks(call: ToolCall): string {
    const index = this.calls.push(call) - 1;
    const args = JSON.stringify(call.arguments);
    return (
      this.chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null) +
      this.chunk({ tool_calls: [{ index, function: { arguments: args } }] }, null)
    );
  }

  /** Keeps a tool call for the non-stream answer. */
  keepToolCall(call: ToolCall): void {
    this.calls.push(call);
  }

  /** Keeps a piece for the non-stream answer. */
  keep(kind: PieceKind, text: string): void {
    if (kind === 'reasoning') this.reasoning += text;
    else this.content += text;
  }

  /** How the reply ended, as `finish_reason`: OpenAI's words where the provider's mean the same, else the provider's own. */
  lastChunk(finish: FinishReason): string {
    return `${this.chunk({}, finish)}data: [DONE]\n\n`;
  }

  /** The non-stream answer, from the pieces kept. */
  message(finish: FinishReason): object {
    // OpenAI answers a turn of tool calls with `content: null` beside `tool_calls`.
    const message: Record<string, unknown> = { role: 'assistant', content: this.content === '' && this.calls.length > 0 ? null : this.content };
    if (this.reasoning !== '') message.reasoning_content = this.reasoning;
    if (this.calls.length > 0) {
      message.tool_calls = this.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
    }
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    };
  }

  private chunk(delta: object, finishReason: FinishReason | null): string {
    const chunk = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }
}

/** A failure after the 200: an error chunk and no [DONE], so SDKs raise instead of ending quietly. */
export function errorChunk(error: object): string {
  return `data: ${JSON.stringify({ error })}\n\n`;
}
