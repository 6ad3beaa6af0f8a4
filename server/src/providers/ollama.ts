import { keyedCall, streamingAdapter, type ProviderCall } from './call';
import { apiUrl, baseUrlOf, describeProvider, fetchNames, field, pluck } from './config';
import type { LineHandler } from './framing';
import { argumentsObject, CallIds, checkArgumentSize, parseArguments, toolNameOf, toolRefusal } from './tools';
import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, PieceSink, ProviderConfig, ProviderModule } from './types';

interface OllamaLine {
  message?: { content?: unknown; thinking?: unknown; tool_calls?: unknown };
  done?: unknown;
  done_reason?: unknown;
  error?: unknown;
}

/** Ollama's native `/api/chat`, NDJSON; the end marker is a line with `"done":true` and its `done_reason`. */
/** Ollama's model list: `/api/tags` names. */
const TAGS = '/api/tags';
const tagNames = (doc: unknown) => pluck(field(doc, 'models'), 'name');

export const ollamaProvider: ProviderModule = {
  adapter: ollamaAdapter,
  listModels(config, deps, signal) {
    // Ollama takes no key; its router's plain-text 404 means a wrong base URL, worded as such.
    const call = keyedCall(config, deps, describeProvider(config), signal, undefined, { keyHint: false, model: 'auto' });
    return fetchNames(call, apiUrl(baseUrlOf(config), TAGS), {}, tagNames);
  },
};

export function ollamaAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  return streamingAdapter(config, deps, 'none', ({ messages, sink, tools: offered, base, label }) => {
    // Ollama takes no tool_choice: `none` is honoured by offering no tools; `required` and a
    // named tool cannot be enforced, so the tools are offered and the model decides.
    const tools = offered !== undefined && offered.toolChoice !== 'none';
    return {
      // A JSON 404 is Ollama's "model not found"; its router's own 404 (wrong base URL) is plain text.
      explain: (f, call) =>
        f.status === 404 && f.body !== undefined && call.model
          ? `model "${call.model}" not found on ${label}; run "ollama pull ${call.model}"`
          : tools
            ? toolRefusal(label, call.model, f)
            : undefined,
      models: { url: apiUrl(base, TAGS), headers: {}, names: tagNames, emptyMessage: `no models are installed on ${label}; run "ollama pull <model>"` },
      request: (call) => {
        const body: Record<string, unknown> = { model: call.model, messages: messages.map((m, i) => ollamaMessage(m, i, messages)), stream: true };
        // Ollama docs, api.md "Chat request (with tools)": `tools` in OpenAI's function form.
        if (tools) {
          body.tools = offered!.tools.map((t) => ({
            type: 'function',
            function: { name: t.name, ...(t.description === undefined ? {} : { description: t.description }), parameters: t.parameters },
          }));
        }
        // No `think` field: Ollama answers 400 to it for models without thinking (CONTRACT §6).
        if (config.maxTokens !== undefined) body.options = { num_predict: config.maxTokens };
        return { url: apiUrl(base, '/api/chat'), headers: {}, body, ndjson: new OllamaReader(call, sink) };
      },
    };
  });
}

/**
 * A message as `/api/chat` takes it: photos as `images`, a list of bare base64 strings on the
 * message (Ollama docs, api.md "Chat request (with images)":
 * https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-with-images).
 */
function ollamaMessage(m: ChatMessage, at: number, all: ChatMessage[]): Record<string, unknown> {
  // Tool history as ollama/ollama api/types.go Message has it: the assistant's `tool_calls`
  // ({id, function:{index, name, arguments}}, arguments an object) and a `tool` message with
  // `tool_name` and `tool_call_id`.
  if (m.role === 'tool') {
    return { role: 'tool', content: m.content, tool_name: toolNameOf(all, at), ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}) };
  }
  if (m.toolCalls?.length) {
    return { role: m.role, content: m.content, tool_calls: m.toolCalls.map((c, index) => ({ id: c.id, function: { index, name: c.name, arguments: c.arguments } })) };
  }
  return m.images?.length ? { role: m.role, content: m.content, images: m.images.map((i) => i.data) } : { role: m.role, content: m.content };
}

class OllamaReader implements LineHandler {
  finish: FinishReason | undefined;
  /** Made at the first tool call: most replies call none. */
  private ids: CallIds | undefined;

  constructor(
    private readonly call: ProviderCall,
    private readonly sink: PieceSink,
  ) {}

  line(text: string): boolean {
    const chunk = this.call.parseObject<OllamaLine>(text);
    if (chunk.error !== undefined) throw this.call.streamError(String(chunk.error));
    const message = chunk.message;
    if (message !== undefined) {
      // Thinking first: Ollama can put the end of the thinking and the start of the answer on one line.
      const thinking = message.thinking;
      const content = message.content;
      if (typeof thinking === 'string' && thinking !== '') this.sink.piece('reasoning', thinking);
      if (typeof content === 'string' && content !== '') this.sink.piece('text', content);
      if (message.tool_calls !== undefined && message.tool_calls !== null) this.toolCalls(message.tool_calls);
    }
    if (chunk.done !== true) return false;
    // `stop`, `length` (num_predict reached), or Ollama's own word (`load`, `unload`).
    this.finish = typeof chunk.done_reason === 'string' && chunk.done_reason !== '' ? chunk.done_reason : 'stop';
    return true;
  }

  /**
   * `message.tool_calls`, each call whole on one line with its arguments an object (ollama/ollama
   * server/routes.go ChatHandler; "Streaming responses with tool calling",
   * https://ollama.com/blog/streaming-tool). Older Ollama gives no id: one is made up.
   */
  private toolCalls(list: unknown): void {
    if (!Array.isArray(list)) throw this.call.fail(`${this.call.label} sent message.tool_calls that is not a list`);
    for (const tc of list as ({ id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null)[]) {
      const name = typeof tc?.function?.name === 'string' ? tc.function.name : '';
      if (name === '') throw this.call.fail(`${this.call.label} sent a tool call without a tool name`);
      const raw = tc?.function?.arguments;
      // Some runners behind Ollama's API put the arguments as a JSON string.
      const args = typeof raw === 'string' ? parseArguments(this.call, name, raw) : argumentsObject(this.call, name, raw);
      checkArgumentSize(this.call, name, args);
      const id = (this.ids ??= new CallIds()).next(typeof tc?.id === 'string' ? tc.id : undefined);
      this.sink.toolCall?.({ id, name, arguments: args });
    }
  }
}
