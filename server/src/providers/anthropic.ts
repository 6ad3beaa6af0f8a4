import { keyedCall, requireKey, streamingAdapter, type ProviderCall } from './call';
import { apiUrl, baseUrlOf, describeProvider, fetchNames, field, LIST_PAGE, pluck } from './config';
import type { EventHandler } from './framing';
import { forcedName, ToolCallAssembler } from './tools';
import { toConversation, type Turn } from './turns';
import type { AdapterDeps, ChatAdapter, FinishReason, PieceSink, ProviderConfig, ProviderModule, ToolOptions } from './types';
import { saidIn, statusText, type HttpFailure } from './wording';

/** Anthropic requires max_tokens; this fits any current Claude model's output limit. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 8192;
/** Every Anthropic request carries the key and the API version it was written against. */
const anthropicHeaders = (key: string) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });

interface AnthropicEvent {
  type?: unknown;
  index?: unknown;
  content_block?: { type?: unknown; id?: unknown; name?: unknown };
  delta?: { type?: unknown; text?: unknown; thinking?: unknown; partial_json?: unknown; stop_reason?: unknown };
  error?: { type?: unknown; message?: unknown };
}

/** Anthropic answers 529 when its API is overloaded (docs: "Errors", HTTP errors). */
export function anthropicOverloaded(label: string, f: HttpFailure): string | undefined {
  return f.status === 529 ? `${label} is overloaded (${statusText(f)}); try again shortly` : undefined;
}

/**
 * How a Messages API reply ended, from `message_delta.delta.stop_reason`: `end_turn` and
 * `stop_sequence` are a normal stop, `max_tokens` the token limit, `refusal` the safety filter,
 * `tool_use` a turn of tool calls; anything else (`pause_turn`, …) as Anthropic says it.
 */
const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  refusal: 'content_filter',
  tool_use: 'tool_calls',
};

/** The Messages API with `stream: true`; the end marker is the `message_stop` event. */
export const anthropicProvider: ProviderModule = {
  adapter: anthropicAdapter,
  async listModels(config, deps, signal) {
    const label = describeProvider(config);
    const key = await requireKey(config, deps, label);
    const call = keyedCall(config, deps, label, signal, key, { model: 'auto', explain: (f) => anthropicOverloaded(label, f) });
    return fetchNames(call, apiUrl(baseUrlOf(config), `/v1/models?limit=${LIST_PAGE}`), anthropicHeaders(key), (doc) => pluck(field(doc, 'data'), 'id'));
  },
};

export function anthropicAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  return streamingAdapter(config, deps, 'required', ({ messages, sink, tools: offered, key, base, label }) => ({
    explain: (f) => anthropicOverloaded(label, f),
    request: (call) => {
      const { system, turns } = toConversation(messages);
      return {
        url: apiUrl(base, '/v1/messages'),
        headers: anthropicHeaders(key),
        body: {
          model: config.model,
          max_tokens: config.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
          ...(system === undefined ? {} : { system }),
          messages: turns.map(anthropicTurn),
          ...(offered ? anthropicTools(offered) : {}),
          stream: true,
        },
        sse: new AnthropicReader(call, sink, label, new ToolCallAssembler(call, sink)),
      };
    },
  }));
}

/**
 * A turn as the Messages API takes it: with photos, content blocks, each photo an `image` block
 * with a base64 `source`, before the text block (Anthropic docs, "Vision", base64-encoded image
 * example: https://docs.anthropic.com/en/docs/build-with-claude/vision).
 */
function anthropicTurn(t: Turn): { role: string; content: string | object[] } {
  if (!t.images?.length && !t.toolCalls?.length && !t.results?.length) return { role: t.role, content: t.content };
  // Tool results first: the Messages API wants them before any other block of the user turn.
  const blocks: object[] = (t.results ?? []).map((r) => ({ type: 'tool_result', tool_use_id: toolUseId(r.id), ...(r.content === '' ? {} : { content: r.content }) }));
  for (const i of t.images ?? []) blocks.push({ type: 'image', source: { type: 'base64', media_type: i.mediaType, data: i.data } });
  if (t.content !== '') blocks.push({ type: 'text', text: t.content });
  for (const c of t.toolCalls ?? []) blocks.push({ type: 'tool_use', id: toolUseId(c.id), name: c.name, input: c.arguments });
  return { role: t.role, content: blocks };
}

/** Anthropic takes ids of `[a-zA-Z0-9_-]` only; ids another provider made (a chat that switched) are made to fit, alike on both sides. */
const toolUseId = (id: string) => id.replace(/[^a-zA-Z0-9_-]/g, '_') || 'call';

/**
 * Tools as the Messages API takes them (Anthropic docs, "Tool use", specifying client tools:
 * `tools: [{name, description, input_schema}]`; `tool_choice` `{"type":"auto"|"any"|"none"}` or
 * `{"type":"tool","name"}`: https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use).
 */
function anthropicTools(options: ToolOptions): Record<string, unknown> {
  const tools = (options.tools ?? []).map((t) => ({ name: t.name, ...(t.description === undefined ? {} : { description: t.description }), input_schema: t.parameters }));
  const choice = options.toolChoice;
  const name = forcedName(choice);
  if (choice === undefined) return { tools };
  const type = name !== undefined ? 'tool' : choice === 'required' ? 'any' : choice;
  return { tools, tool_choice: name !== undefined ? { type, name } : { type } };
}

class AnthropicReader implements EventHandler {
  finish: FinishReason | undefined;
  private stopReason: string | undefined;

  constructor(
    private readonly call: ProviderCall,
    private readonly sink: PieceSink,
    private readonly label: string,
    private readonly calls: ToolCallAssembler,
  ) {}

  event(type: string | undefined, raw: string): boolean {
    const data = this.call.parseObject<AnthropicEvent>(raw);
    const kind = data.type ?? type;
    if (kind === 'content_block_delta') {
      const d = data.delta;
      if (d?.type === 'text_delta' && typeof d.text === 'string' && d.text !== '') this.sink.piece('text', d.text);
      else if (d?.type === 'thinking_delta' && typeof d.thinking === 'string' && d.thinking !== '') this.sink.piece('reasoning', d.thinking);
      else if (d?.type === 'input_json_delta' && typeof d.partial_json === 'string') this.calls.add(blockIndex(data), d.partial_json);
    } else if (kind === 'content_block_start') {
      // A tool_use block streams its input as input_json_delta fragments until content_block_stop
      // (Anthropic docs, "Streaming Messages", input JSON delta:
      // https://docs.anthropic.com/en/docs/build-with-claude/streaming#input-json-delta).
      const block = data.content_block;
      if (block?.type === 'tool_use') this.calls.begin(blockIndex(data), typeof block.id === 'string' ? block.id : '', typeof block.name === 'string' ? block.name : '');
    } else if (kind === 'content_block_stop') {
      this.calls.finish(blockIndex(data));
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
      if (this.calls.open) throw this.call.fail(`${this.label} ended the reply inside a tool call`);
      this.finish = this.stopReason === undefined ? 'stop' : (STOP_REASONS[this.stopReason] ?? this.stopReason);
      return true;
    }
    return false;
  }
}

const blockIndex = (data: AnthropicEvent): number => (typeof data.index === 'number' ? data.index : 0);
