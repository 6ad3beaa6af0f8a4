import { keyedCall, readKey, streamingAdapter, type ProviderCall } from './call';
import { anthropicOverloaded } from './anthropic';
import { apiUrl, baseUrlOf, describeProvider, fetchNames, field, pluck } from './config';
import type { EventHandler } from './framing';
import { geminiKeyRefusal } from './gemini';
import { forcedName, toolRefusal, ToolCallAssembler } from './tools';
import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, PieceSink, ProviderConfig, ProviderModule, ToolOptions } from './types';
import { providerMessage, saidIn } from './wording';

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

/**
 * `/chat/completions` SSE as served by OpenAI, LM Studio, llama.cpp, vLLM, Jan, OpenRouter, Groq,
 * DeepSeek… The end marker is a chunk with a non-null `finish_reason` (`stop`, `length`,
 * `content_filter`, `tool_calls` or the server's own word), or `data: [DONE]`.
 */
/** The server's key, when the user set one, as OpenAI's bearer header. */
const bearer = (key: string | undefined): Record<string, string> => (key ? { authorization: `Bearer ${key}` } : {});
const modelIds = (doc: unknown) => pluck(field(doc, 'data'), 'id');

export const openAiCompatibleProvider: ProviderModule = {
  adapter: openAiCompatibleAdapter,
  async listModels(config, deps, signal) {
    const label = describeProvider(config);
    const key = await readKey(config, deps, label);
    const ctx = { label, keyed: Boolean(key), keyHint: deps.keys.howToSet(config) };
    const call = keyedCall(config, deps, label, signal, key, { model: 'auto', explain: (f) => geminiKeyRefusal(ctx, f) ?? anthropicOverloaded(label, f) });
    return fetchNames(call, apiUrl(baseUrlOf(config), '/models'), bearer(key), modelIds);
  },
};

export function openAiCompatibleAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  // Local servers (LM Studio, llama.cpp) take no key; send one only when the user set one.
  return streamingAdapter(config, deps, 'optional', ({ messages, sink, tools: offered, key, base, label, ctx }) => {
    const auth = bearer(key);
    const tools = offered !== undefined;
    return {
      // Gateways speak for the providers behind them: Google's OpenAI-compatible endpoint refuses
      // a bad key the Gemini way, and a gateway in front of Anthropic passes its 529 on.
      explain: (f, call) => geminiKeyRefusal(ctx, f) ?? anthropicOverloaded(label, f) ?? (tools ? toolRefusal(label, call.model, f) : undefined),
      models: {
        url: apiUrl(base, '/models'),
        headers: auth,
        names: modelIds,
        emptyMessage: `no models are loaded on ${label}; load or download one in the server first`,
      },
      request: (call) => {
        const body: Record<string, unknown> = { model: call.model, messages: messages.map(openAiMessage), stream: true };
        if (config.maxTokens !== undefined) body.max_tokens = config.maxTokens;
        if (offered) Object.assign(body, openAiTools(offered));
        return { url: apiUrl(base, '/chat/completions'), headers: auth, body, sse: new OpenAiReader(call, sink, new ToolCallAssembler(call, sink)) };
      },
    };
  });
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

class OpenAiReader implements EventHandler {
  finish: FinishReason | undefined;

  constructor(
    private readonly call: ProviderCall,
    private readonly sink: PieceSink,
    private readonly calls: ToolCallAssembler,
  ) {}

  event(type: string | undefined, data: string): boolean {
    // Old llama.cpp servers report failures in an `error:` SSE field.
    if (type === 'error') throw this.call.streamError(saidIn(data));
    if (data.trim() === '[DONE]') {
      this.calls.finishAll();
      this.finish = 'stop';
      return true;
    }
    const chunk = this.call.parseObject<Chunk>(data);
    // `{"error":{…}}` (OpenAI, OpenRouter) or vLLM's `{"object":"error","message":…}`.
    if (chunk.error !== undefined || chunk.object === 'error') throw this.call.streamError(providerMessage(chunk) ?? data);
    const choice = chunk.choices?.[0];
    if (choice === undefined) return false;
    const delta = choice.delta;
    if (delta !== undefined) {
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === 'string' && reasoning !== '') this.sink.piece('reasoning', reasoning);
      if (typeof delta.content === 'string' && delta.content !== '') this.sink.piece('text', delta.content);
      if (delta.tool_calls !== undefined && delta.tool_calls !== null) this.toolCalls(delta.tool_calls);
    }
    const finish = choice.finish_reason;
    if (finish === undefined || finish === null) return false;
    this.calls.finishAll();
    this.finish = typeof finish === 'string' && finish !== '' ? finish : 'stop';
    return true;
  }

  /**
   * Assembles `delta.tool_calls` by `index` (OpenAI API reference, "The chat completion chunk
   * object": choices[].delta.tool_calls[] with index, id, type, function.name, function.arguments).
   * Servers that number every parallel call 0 tell them apart by a new id with a new name; a new
   * id without a name (some servers repeat fresh ids on fragments) continues the open call.
   */
  private toolCalls(deltas: unknown): void {
    const calls = this.calls;
    if (!Array.isArray(deltas)) throw this.call.fail(`${this.call.label} sent delta.tool_calls that is not a list`);
    for (const d of deltas as (ToolCallDelta | null)[]) {
      const index = typeof d?.index === 'number' ? d.index : 0;
      const id = typeof d?.id === 'string' && d.id !== '' ? d.id : undefined;
      const name = typeof d?.function?.name === 'string' ? d.function.name : undefined;
      const fragment = d?.function?.arguments;
      if (!calls.has(index) || (id !== undefined && name !== undefined && name !== '' && calls.idAt(index) !== id)) {
        if (calls.has(index)) calls.finish(index);
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
