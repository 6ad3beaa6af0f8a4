import { baseUrlOf, describeProvider } from './config';
import { ProviderCall } from './http';
import { pluck, resolveModel } from './models';
import type { AdapterDeps, PullAdapter, ChatMessage, Piece, ProviderConfig } from './types';

interface OllamaLine {
  message?: { content?: unknown; thinking?: unknown };
  done?: unknown;
  error?: unknown;
}

/** Ollama's native `/api/chat`, NDJSON; the end marker is a line with `"done":true`. */
export function ollamaAdapter(config: ProviderConfig, deps: AdapterDeps): PullAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);

  return {
    label,
    async *stream(messages: ChatMessage[], signal: AbortSignal): AsyncGenerator<Piece> {
      const call: ProviderCall = new ProviderCall({
        label,
        idleTimeoutMs: deps.idleTimeoutMs,
        signal,
        model: config.model,
        // A JSON 404 is Ollama's "model not found"; its router's own 404 (wrong base URL) is plain text.
        explain: ({ status, body }) =>
          status === 404 && body !== undefined && call.model
            ? `model "${call.model}" not found on ${label}; run "ollama pull ${call.model}"`
            : undefined,
      });
      try {
        call.model = await resolveModel(call, config, {
          url: `${base}/api/tags`,
          headers: {},
          names: (doc) => pluck((doc as { models?: unknown } | null)?.models, 'name'),
          emptyMessage: `no models are installed on ${label}; run "ollama pull <model>"`,
        });
        const body: Record<string, unknown> = { model: call.model, messages, stream: true };
        // No `think` field: Ollama answers 400 to it for models without thinking (CONTRACT §6).
        if (config.maxTokens !== undefined) body.options = { num_predict: config.maxTokens };
        const res = await call.send(`${base}/api/chat`, { method: 'POST', headers: { accept: 'application/x-ndjson' }, body });

        for await (const line of call.lines(res)) {
          const chunk = call.parseObject<OllamaLine>(line);
          if (chunk.error !== undefined) throw call.streamError(String(chunk.error));
          const thinking = chunk.message?.thinking;
          const content = chunk.message?.content;
          if (typeof thinking === 'string' && thinking !== '') yield { kind: 'reasoning', text: thinking };
          if (typeof content === 'string' && content !== '') yield { kind: 'text', text: content };
          if (chunk.done === true) return;
        }
        throw call.truncated();
      } finally {
        call.close();
      }
    },
  };
}
