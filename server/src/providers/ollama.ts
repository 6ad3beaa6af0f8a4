import { apiUrl, baseUrlOf, describeProvider, field, pluck } from './config';
import type { Dialect, Mapper, Part } from './dialect';
import { argumentsObject, CallIds, noName, parseArguments, parseObject, toolNameOf, toolRefusal, wholeCall } from './framing';
import type { ChatMessage, ProviderConfig } from './types';
import { StreamFault } from './wording';

interface OllamaLine {
  message?: { content?: unknown; thinking?: unknown; tool_calls?: unknown };
  done?: unknown;
  done_reason?: unknown;
  error?: unknown;
}

/** Ollama's model list: `/api/tags` names. */
const tagNames = (doc: unknown) => pluck(field(doc, 'models'), 'name');

/** Ollama's native `/api/chat`, NDJSON; the end marker is a line with `"done":true` and its `done_reason`. Ollama takes no key. */
export function ollamaDialect(config: ProviderConfig): Dialect {
  const base = baseUrlOf(config);
  const label = describeProvider(config);
  const chat = apiUrl(base, '/api/chat');
  const tags = apiUrl(base, '/api/tags');
  // Ollama takes no tool_choice: `none` is honoured by offering no tools; `required` and a
  // named tool cannot be enforced, so the tools are offered and the model decides.
  const offers = (tools: { toolChoice?: unknown } | undefined) => tools !== undefined && tools.toolChoice !== 'none';
  return {
    key: 'none',
    framing: 'ndjson',
    listing: () => ({ url: tags, headers: {}, names: tagNames }),
    noModels: `no models are installed on ${label}; run "ollama pull <model>"`,
    // A JSON 404 is Ollama's "model not found"; its router's own 404 (wrong base URL) is plain text.
    explain: (f, { model, tools }) =>
      f.status === 404 && f.body !== undefined && model
        ? `model "${model}" not found on ${label}; run "ollama pull ${model}"`
        : offers(tools)
          ? toolRefusal(label, model, f)
          : undefined,
    request: ({ messages, tools, model }) => {
      const body: Record<string, unknown> = { model, messages: messages.map((m, i) => ollamaMessage(m, i, messages)), stream: true };
      // Ollama docs, api.md "Chat request (with tools)": `tools` in OpenAI's function form.
      if (tools && offers(tools)) {
        body.tools = tools.tools.map((t) => ({
          type: 'function',
          function: { name: t.name, ...(t.description === undefined ? {} : { description: t.description }), parameters: t.parameters },
        }));
      }
      // No `think` field: Ollama answers 400 to it for models without thinking (CONTRACT §6).
      if (config.maxTokens !== undefined) body.options = { num_predict: config.maxTokens };
      return { url: chat, headers: {}, body };
    },
    mapper: () => new OllamaLines(),
  };
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

class OllamaLines implements Mapper {
  /** Made at the first tool call: most replies call none. */
  private ids: CallIds | undefined;

  map(text: string, _type: string | undefined, out: Part[]): void {
    const chunk = parseObject<OllamaLine>(text);
    if (chunk.error !== undefined) throw StreamFault.said(String(chunk.error));
    const message = chunk.message;
    if (message !== undefined) {
      // Thinking first: Ollama can put the end of the thinking and the start of the answer on one line.
      const thinking = message.thinking;
      const content = message.content;
      if (typeof thinking === 'string' && thinking !== '') out.push({ kind: 'reasoning', text: thinking });
      if (typeof content === 'string' && content !== '') out.push({ kind: 'text', text: content });
      if (message.tool_calls !== undefined && message.tool_calls !== null) this.toolCalls(message.tool_calls, out);
    }
    if (chunk.done !== true) return;
    // `stop`, `length` (num_predict reached), or Ollama's own word (`load`, `unload`).
    out.push({ kind: 'finish', reason: typeof chunk.done_reason === 'string' && chunk.done_reason !== '' ? chunk.done_reason : 'stop' });
  }

  /**
   * `message.tool_calls`, each call whole on one line with its arguments an object (ollama/ollama
   * server/routes.go ChatHandler; "Streaming responses with tool calling",
   * https://ollama.com/blog/streaming-tool). Older Ollama gives no id: one is made up.
   */
  private toolCalls(list: unknown, out: Part[]): void {
    if (!Array.isArray(list)) throw StreamFault.plain('sent message.tool_calls that is not a list');
    for (const tc of list as ({ id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null)[]) {
      const name = typeof tc?.function?.name === 'string' ? tc.function.name : '';
      if (name === '') throw noName();
      const raw = tc?.function?.arguments;
      // Some runners behind Ollama's API put the arguments as a JSON string.
      const args = typeof raw === 'string' ? parseArguments(name, raw) : argumentsObject(name, raw);
      out.push(wholeCall((this.ids ??= new CallIds()).next(typeof tc?.id === 'string' ? tc.id : undefined), name, args));
    }
  }
}
