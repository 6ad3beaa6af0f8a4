import type { ProviderCall } from './call';
import { apiUrl, baseUrlOf, describeProvider } from './config';
import type { EventHandler } from './framing';
import { keyedCall, requireKey } from './keys';
import { toConversation, type Turn } from './turns';
import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, PieceSink, ProviderConfig } from './types';
import { saidIn, statusText, type HttpFailure } from './wording';

/** Anthropic requires max_tokens; this fits any current Claude model's output limit. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 8192;
const API_VERSION = '2023-06-01';

interface AnthropicEvent {
  type?: unknown;
  delta?: { type?: unknown; text?: unknown; thinking?: unknown; stop_reason?: unknown };
  error?: { type?: unknown; message?: unknown };
}

/** Anthropic answers 529 when its API is overloaded (docs: "Errors", HTTP errors). */
export function anthropicOverloaded(label: string, f: HttpFailure): string | undefined {
  return f.status === 529 ? `${label} is overloaded (${statusText(f)}); try again shortly` : undefined;
}

/**
 * How a Messages API reply ended, from `message_delta.delta.stop_reason`: `end_turn` and
 * `stop_sequence` are a normal stop, `max_tokens` the token limit, `refusal` the safety filter;
 * anything else (`tool_use`, `pause_turn`, …) as Anthropic says it.
 */
const STOP_REASONS: Record<string, FinishReason> = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', refusal: 'content_filter' };

/** The Messages API with `stream: true`; the end marker is the `message_stop` event. */
export function anthropicAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);

  return {
    label,
    async run(messages: ChatMessage[], signal: AbortSignal, sink: PieceSink): Promise<FinishReason> {
      const key = await requireKey(config, deps, label);
      const call = keyedCall(config, deps, label, signal, key, { explain: (f) => anthropicOverloaded(label, f) });
      try {
        const { system, turns } = toConversation(messages);
        sink.model?.(config.model ?? '');
        const res = await call.send(apiUrl(base, '/v1/messages'), {
          method: 'POST',
          headers: { 'x-api-key': key, 'anthropic-version': API_VERSION, accept: 'text/event-stream' },
          body: {
            model: config.model,
            max_tokens: config.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
            ...(system === undefined ? {} : { system }),
            messages: turns.map(anthropicTurn),
            stream: true,
          },
        });
        const reader = new AnthropicReader(call, sink, label);
        await call.events(res, reader, sink);
        if (reader.finish === undefined) throw call.truncated();
        return reader.finish;
      } finally {
        call.close();
      }
    },
  };
}

/**
 * A turn as the Messages API takes it: with photos, content blocks, each photo an `image` block
 * with a base64 `source`, before the text block (Anthropic docs, "Vision", base64-encoded image
 * example: https://docs.anthropic.com/en/docs/build-with-claude/vision).
 */
function anthropicTurn(t: Turn): { role: string; content: string | object[] } {
  if (!t.images?.length) return { role: t.role, content: t.content };
  const blocks: object[] = t.images.map((i) => ({ type: 'image', source: { type: 'base64', media_type: i.mediaType, data: i.data } }));
  if (t.content !== '') blocks.push({ type: 'text', text: t.content });
  return { role: t.role, content: blocks };
}

class AnthropicReader implements EventHandler {
  finish: FinishReason | undefined;
  private stopReason: string | undefined;

  constructor(
    private readonly call: ProviderCall,
    private readonly sink: PieceSink,
    private readonly label: string,
  ) {}

  event(type: string | undefined, raw: string): boolean {
    const data = this.call.parseObject<AnthropicEvent>(raw);
    const kind = data.type ?? type;
    if (kind === 'content_block_delta') {
      const d = data.delta;
      if (d?.type === 'text_delta' && typeof d.text === 'string' && d.text !== '') this.sink.piece('text', d.text);
      else if (d?.type === 'thinking_delta' && typeof d.thinking === 'string' && d.thinking !== '') this.sink.piece('reasoning', d.thinking);
    } else if (kind === 'message_delta') {
      const reason = data.delta?.stop_reason;
      if (typeof reason === 'string' && reason !== '') this.stopReason = reason;
    } else if (kind === 'error') {
      const errorType = typeof data.error?.type === 'string' ? data.error.type : 'error';
      const said = saidIn(raw);
      throw errorType === 'overloaded_error'
        ? this.call.fail(`${this.label} is overloaded: ${this.call.redact(said)}; try again shortly`)
        : this.call.streamError(`${said} (${errorType})`);
    } else if (kind === 'message_stop') {
      this.finish = this.stopReason === undefined ? 'stop' : (STOP_REASONS[this.stopReason] ?? this.stopReason);
      return true;
    }
    return false;
  }
}
