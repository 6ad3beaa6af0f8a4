import { baseUrlOf, describeProvider, wantsAutoModel } from './config';
import { ProviderCall } from './http';
import { firstListedModel, pluck } from './models';
import type { AdapterDeps, ChatAdapter, ChatMessage, Piece, ProviderConfig } from './types';

interface OllamaLine {
  message?: { content?: unknown; thinking?: unknown };
  done?: unknown;
  error?: unknown;
}

/** Ollama's native `/api/chat`, NDJSON; the end marker is a line with `"done":true`. */
export function ollamaAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);

  return {
    label,
    async *stream(messages: ChatMessage[], signal: AbortSignal): AsyncGenerator<Piece> {
      let model = config.model ?? 'auto';
      const call = new ProviderCall({
        label,
        idleTimeoutMs: deps.idleTimeoutMs,
        signal,
        explain: ({ status, said }) =>
          status === 404 && /not found/i.test(said) ? `model "${model}" not found on ${label}; run "ollama pull ${model}"` : undefined,
      });
      try {
        if (wantsAutoModel(config)) {
          model = await firstListedModel(call, {
            url: `${base}/api/tags`,
            headers: {},
            names: (doc) => pluck((doc as { models?: unknown } | null)?.models, 'name'),
            emptyMessage: `no models are installed on ${label}; run "ollama pull <model>"`,
          });
        }
        const body: Record<string, unknown> = { model, messages, stream: true };
        // No `think` field: Ollama answers 400 to it for models without thinking (CONTRACT §6).
        if (config.maxTokens !== undefined) body.options = { num_predict: config.maxTokens };
        const res = await call.send(`${base}/api/chat`, { method: 'POST', headers: { accept: 'application/x-ndjson' }, body });

        for await (const line of call.lines(res)) {
          const chunk = call.parseJson(line) as OllamaLine;
          if (typeof chunk !== 'object' || chunk === null) throw call.fail(`${label} sent an unexpected line: ${line.slice(0, 120)}`);
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
