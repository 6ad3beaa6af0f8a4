import { anthropicOverloaded } from './anthropic';
import { apiUrl, baseUrlOf, describeProvider, field, pluck } from './config';
import type { Dialect, Mapper, Part } from './dialect';
import { forcedName, parseObject, toolRefusal, ToolCallAssembler } from './framing';
import { geminiKeyRefusal } from './gemini';
import type { ChatMessage, ProviderConfig, ToolOptions } from './types';
import { providerMessage, saidIn, StreamFault } from './wording';

interface Chunk {
  object?: unknown;
  message?: unknown;
  error?: unknown;
  choices?: { delta?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown; tool_calls?: unknown }; finish_reason?: unknown }[];
}

/** One entry of `delta.tool_calls`: the first of a call carries id, type and name; later ones argument fragments. */
interface ToolCallDelta {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

/** The server's key, when the user set one, as OpenAI's bearer header. */
const bearer = (key: string | undefined): Record<string, string> => (key ? { authorization: `Bearer ${key}` } : {});
const modelIds = (doc: unknown) => pluck(field(doc, 'data'), 'id');

/**
 * `/chat/completions` SSE as served by OpenAI, LM Studio, llama.cpp, vLLM, Jan, OpenRouter, Groq,
 * DeepSeek… The end marker is a chunk with a non-null `finish_reason` (`stop`, `length`,
 * `content_filter`, `tool_calls` or the server's own word), or `data: [DONE]`. Local servers
 * (LM Studio, llama.cpp) take no key: one is sent only when the user set one.
 */
export function openAiCompatibleDialect(config: ProviderConfig): Dialect {
  const base = baseUrlOf(config);
  const label = describeProvider(config);
  const chat = apiUrl(base, '/chat/completions');
  const models = apiUrl(base, '/models');
  return {
    key: 'optional',
    framing: 'sse',
    listing: (key) => ({ url: models, headers: bearer(key), names: modelIds }),
    noModels: `no models are loaded on ${label}; load or download one in the server first`,
    // Gateways speak for the providers behind them: Google's OpenAI-compatible endpoint refuses
    // a bad key the Gemini way, and a gateway in front of Anthropic passes its 529 on.
    explain: (f, { ctx, model, tools }) => geminiKeyRefusal(ctx, f) ?? anthropicOverloaded(label, f) ?? (tools ? toolRefusal(label, model, f) : undefined),
    request: ({ messages, tools, key, model }) => {
      const body: Record<string, unknown> = { model, messages: messages.map(openAiMessage), stream: true };
      if (config.maxTokens !== undefined) body.max_tokens = config.maxTokens;
      if (tools) Object.assign(body, openAiTools(tools));
      return { url: chat, headers: bearer(key), body };
    },
    mapper: () => new OpenAiEvents(),
  };
}

/**
 * A message as `/chat/completions` takes it: with photos, content is an array of `image_url`
 * parts holding data URLs, then the text part (OpenAI docs, "Images and vision", Base64-encoded
 * images: https://platform.openai.com/docs/guides/images-vision#giving-a-model-images-as-input).
 */
function openAiMessage(m: ChatMessage): Record<string, unknown> {
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: m.content };
  if (m.toolCalls?.length) {
    return {
      role: 'assistant',
      // OpenAI's own form for a turn that only called tools is `content: null`.
      content: m.content === '' ? null : m.content,
      tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })),
    };
  }
  if (!m.images?.length) return { role: m.role, content: m.content };
  const parts: object[] = m.images.map((i) => ({ type: 'image_url', image_url: { url: `data:${i.mediaType};base64,${i.data}` } }));
  if (m.content !== '') parts.push({ type: 'text', text: m.content });
  return { role: m.role, content: parts };
}

/**
 * `tools` and `tool_choice` as the chat completions API takes them (OpenAI API reference, "Create
 * chat completion": tools[].type "function" with function.name/description/parameters;
 * tool_choice "none" | "auto" | "required" | {"type":"function","function":{"name"}}).
 */
function openAiTools(options: ToolOptions): Record<string, unknown> {
  const tools = (options.tools ?? []).map((t) => ({
    type: 'function',
    function: { name: t.name, ...(t.description === undefined ? {} : { description: t.description }), parameters: t.parameters },
  }));
  const name = forcedName(options.toolChoice);
  const choice = name !== undefined ? { type: 'function', function: { name } } : options.toolChoice;
  return choice === undefined ? { tools } : { tools, tool_choice: choice };
}

class OpenAiEvents implements Mapper {
  private readonly calls = new ToolCallAssembler();

  map(data: string, type: string | undefined, out: Part[]): void {
    // Old llama.cpp servers report failures in an `error:` SSE field.
    if (type === 'error') throw StreamFault.said(saidIn(data));
    if (data.trim() === '[DONE]') {
      this.calls.finishAll(out);
      out.push({ kind: 'finish', reason: 'stop' });
      return;
    }
    const chunk = parseObject<Chunk>(data);
    // `{"error":{…}}` (OpenAI, OpenRouter) or vLLM's `{"object":"error","message":…}`.
    if (chunk.error !== undefined || chunk.object === 'error') throw StreamFault.said(providerMessage(chunk) ?? data);
    const choice = chunk.choices?.[0];
    if (choice === undefined) return;
    const delta = choice.delta;
    if (delta !== undefined) {
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === 'string' && reasoning !== '') out.push({ kind: 'reasoning', text: reasoning });
      if (typeof delta.content === 'string' && delta.content !== '') out.push({ kind: 'text', text: delta.content });
      if (delta.tool_calls !== undefined && delta.tool_calls !== null) this.toolCalls(delta.tool_calls, out);
    }
    const finish = choice.finish_reason;
    if (finish === undefined || finish === null) return;
    this.calls.finishAll(out);
    out.push({ kind: 'finish', reason: typeof finish === 'string' && finish !== '' ? finish : 'stop' });
  }

  /**
   * Assembles `delta.tool_calls` by `index` (OpenAI API reference, "The chat completion chunk
   * object": choices[].delta.tool_calls[] with index, id, type, function.name, function.arguments).
   * Servers that number every parallel call 0 tell them apart by a new id with a new name; a new
   * id without a name (some servers repeat fresh ids on fragments) continues the open call.
   */
  private toolCalls(deltas: unknown, out: Part[]): void {
    const calls = this.calls;
    if (!Array.isArray(deltas)) throw StreamFault.plain('sent delta.tool_calls that is not a list');
    for (const d of deltas as (ToolCallDelta | null)[]) {
      const index = typeof d?.index === 'number' ? d.index : 0;
      const id = typeof d?.id === 'string' && d.id !== '' ? d.id : undefined;
      const name = typeof d?.function?.name === 'string' ? d.function.name : undefined;
      const fragment = d?.function?.arguments;
      if (!calls.has(index) || (id !== undefined && name !== undefined && name !== '' && calls.idAt(index) !== id)) {
        if (calls.has(index)) calls.finish(index, out);
        calls.begin(index, id ?? `call_${index}`, name ?? '');
      } else if (name !== undefined && name !== '') {
        calls.rename(index, name);
      }
      if (typeof fragment === 'string') calls.add(index, fragment);
      // A few servers send the arguments as an object rather than a JSON string.
      else if (typeof fragment === 'object' && fragment !== null) calls.add(index, JSON.stringify(fragment));
    }
  }
}
