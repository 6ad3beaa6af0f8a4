import type { ProviderCall } from './call';
import { apiUrl, baseUrlOf, describeProvider } from './config';
import type { LineHandler } from './framing';
import { keyedCall } from './keys';
import { pluck, resolveModel } from './models';
import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, PieceSink, ProviderConfig } from './types';

interface OllamaLine {
  message?: { content?: unknown; thinking?: unknown };
  done?: unknown;
  done_reason?: unknown;
  error?: unknown;
}

/** Ollama's native `/api/chat`, NDJSON; the end marker is a line with `"done":true` and its `done_reason`. */
export function ollamaAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);

  return {
    label,
    async run(messages: ChatMessage[], signal: AbortSignal, sink: PieceSink): Promise<FinishReason> {
      const call: ProviderCall = keyedCall(config, deps, label, signal, undefined, {
        keyHint: false,
        // A JSON 404 is Ollama's "model not found"; its router's own 404 (wrong base URL) is plain text.
        explain: ({ status, body }) =>
          status === 404 && body !== undefined && call.model ? `model "${call.model}" not found on ${label}; run "ollama pull ${call.model}"` : undefined,
      });
      try {
        call.model = await resolveModel(call, config, {
          url: apiUrl(base, '/api/tags'),
          headers: {},
          names: (doc) => pluck((doc as { models?: unknown } | null)?.models, 'name'),
          emptyMessage: `no models are installed on ${label}; run "ollama pull <model>"`,
        });
        sink.model?.(call.model);
        const body: Record<string, unknown> = { model: call.model, messages: messages.map(ollamaMessage), stream: true };
        // No `think` field: Ollama answers 400 to it for models without thinking (CONTRACT §6).
        if (config.maxTokens !== undefined) body.options = { num_predict: config.maxTokens };
        const res = await call.send(apiUrl(base, '/api/chat'), { method: 'POST', headers: { accept: 'application/x-ndjson' }, body });
        const reader = new OllamaReader(call, sink);
        await call.lines(res, reader, sink);
        if (reader.finish === undefined) throw call.truncated();
        return reader.finish;
      } finally {
        call.close();
      }
    },
  };
}

/**
 * A message as `/api/chat` takes it: photos as `images`, a list of bare base64 strings on the
 * message (Ollama docs, api.md "Chat request (with images)":
 * https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-with-images).
 */
function ollamaMessage(m: ChatMessage): { role: string; content: string; images?: string[] } {
  return m.images?.length ? { role: m.role, content: m.content, images: m.images.map((i) => i.data) } : { role: m.role, content: m.content };
}

class OllamaReader implements LineHandler {
  finish: FinishReason | undefined;

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
    }
    if (chunk.done !== true) return false;
    // `stop`, `length` (num_predict reached), or Ollama's own word (`load`, `unload`).
    this.finish = typeof chunk.done_reason === 'string' && chunk.done_reason !== '' ? chunk.done_reason : 'stop';
    return true;
  }
}
