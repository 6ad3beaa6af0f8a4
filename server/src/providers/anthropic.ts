import { apiUrl, baseUrlOf, describeProvider, field, LIST_PAGE, pluck } from './config';
import type { Dialect, Mapper, Part } from './dialect';
import { forcedName, parseObject, ToolCallAssembler } from './framing';
import { toConversation, type Turn } from './turns';
import type { FinishReason, ProviderConfig, ToolOptions } from './types';
import { saidIn, statusText, StreamFault, type HttpFailure } from './wording';

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

const modelIds = (doc: unknown) => pluck(field(doc, 'data'), 'id');

/** The Messages API with `stream: true`; the end marker is the `message_stop` event. */
export function anthropicDialect(config: ProviderConfig): Dialect {
  const base = baseUrlOf(config);
  const label = describeProvider(config);
  const messagesUrl = apiUrl(base, '/v1/messages');
  const models = apiUrl(base, `/v1/models?limit=${LIST_PAGE}`);
  return {
    key: 'required',
    framing: 'sse',
    listing: (key) => ({ url: models, headers: anthropicHeaders(key!), names: modelIds }),
    explain: (f) => anthropicOverloaded(label, f),
    request: ({ messages, tools, key }) => {
      const { system, turns } = toConversation(messages);
      return {
        url: messagesUrl,
        headers: anthropicHeaders(key!),
        body: {
          model: config.model,
          max_tokens: config.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
          ...(system === undefined ? {} : { system }),
          messages: turns.map(anthropicTurn),
          ...(tools ? anthropicTools(tools) : {}),
          stream: true,
        },
      };
    },
    mapper: () => new AnthropicEvents(),
  };
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

class AnthropicEvents implements Mapper {
  private readonly calls = new ToolCallAssembler();
  private stopReason: string | undefined;

  map(raw: string, type: string | undefined, out: Part[]): void {
    const data = parseObject<AnthropicEvent>(raw);
    const kind = data.type ?? type;
    if (kind === 'content_block_delta') {
      const d = data.delta;
      if (d?.type === 'text_delta' && typeof d.text === 'string' && d.text !== '') out.push({ kind: 'text', text: d.text });
      else if (d?.type === 'thinking_delta' && typeof d.thinking === 'string' && d.thinking !== '') out.push({ kind: 'reasoning', text: d.thinking });
      else if (d?.type === 'input_json_delta' && typeof d.partial_json === 'string') this.calls.add(blockIndex(data), d.partial_json);
    } else if (kind === 'content_block_start') {
      // A tool_use block streams its input as input_json_delta fragments until content_block_stop
      // (Anthropic docs, "Streaming Messages", input JSON delta:
      // https://docs.anthropic.com/en/docs/build-with-claude/streaming#input-json-delta).
      const block = data.content_block;
      if (block?.type === 'tool_use') this.calls.begin(blockIndex(data), typeof block.id === 'string' ? block.id : '', typeof block.name === 'string' ? block.name : '');
    } else if (kind === 'content_block_stop') {
      this.calls.finish(blockIndex(data), out);
    } else if (kind === 'message_delta') {
      const reason = data.delta?.stop_reason;
      if (typeof reason === 'string' && reason !== '') this.stopReason = reason;
    } else if (kind === 'error') {
      const errorType = typeof data.error?.type === 'string' ? data.error.type : 'error';
      const said = saidIn(raw);
      throw errorType === 'overloaded_error' ? StreamFault.overloaded(said) : StreamFault.said(`${said} (${errorType})`);
    } else if (kind === 'message_stop') {
      if (this.calls.open) throw StreamFault.plain('ended the reply inside a tool call');
      out.push({ kind: 'finish', reason: this.stopReason === undefined ? 'stop' : (STOP_REASONS[this.stopReason] ?? this.stopReason) });
    }
  }
}

const blockIndex = (data: AnthropicEvent): number => (typeof data.index === 'number' ? data.index : 0);
