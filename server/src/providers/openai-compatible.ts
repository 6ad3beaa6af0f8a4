import { baseUrlOf, describeProvider } from './config';
import { providerMessage, saidIn } from './http';
import { keyedCall, readKey } from './keys';
import { pluck, resolveModel } from './models';
import type { AdapterDeps, PullAdapter, ChatMessage, Piece, ProviderConfig } from './types';

interface Chunk {
  object?: unknown;
  message?: unknown;
  error?: unknown;
  choices?: { delta?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown }; finish_reason?: unknown }[];
}

/**
 * `/chat/completions` SSE as served by OpenAI, LM Studio, llama.cpp, vLLM, Jan, OpenRouter, Groq,
 * DeepSeek… The end marker is `data: [DONE]` or a chunk with a non-null `finish_reason`.
 */
export function openAiCompatibleAdapter(config: ProviderConfig, deps: AdapterDeps): PullAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);

  return {
    label,
    async *stream(messages: ChatMessage[], signal: AbortSignal): AsyncGenerator<Piece> {
      // Local servers (LM Studio, llama.cpp) take no key; send one only when the user set one.
      const key = await readKey(config, deps, label);
      const auth: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
      const call = keyedCall(config, deps, label, signal, key);
      try {
        call.model = await resolveModel(call, config, {
          url: `${base}/models`,
          headers: auth,
          names: (doc) => pluck((doc as { data?: unknown } | null)?.data, 'id'),
          emptyMessage: `no models are loaded on ${label}; load or download one in the server first`,
        });
        const body: Record<string, unknown> = { model: call.model, messages, stream: true };
        if (config.maxTokens !== undefined) body.max_tokens = config.maxTokens;
        const res = await call.send(`${base}/chat/completions`, {
          method: 'POST',
          headers: { ...auth, accept: 'text/event-stream' },
          body,
        });

        for await (const ev of call.events(res)) {
          // Old llama.cpp servers report failures in an `error:` SSE field.
          if (ev.event === 'error') throw call.streamError(saidIn(ev.data));
          if (ev.data.trim() === '[DONE]') return;
          const chunk = call.parseObject<Chunk>(ev.data);
          // `{"error":{…}}` (OpenAI, OpenRouter) or vLLM's `{"object":"error","message":…}`.
          if (chunk.error !== undefined || chunk.object === 'error') throw call.streamError(providerMessage(chunk) ?? ev.data);
          const choice = chunk.choices?.[0];
          const delta = choice?.delta;
          const reasoning = delta?.reasoning_content ?? delta?.reasoning;
          if (typeof reasoning === 'string' && reasoning !== '') yield { kind: 'reasoning', text: reasoning };
          if (typeof delta?.content === 'string' && delta.content !== '') yield { kind: 'text', text: delta.content };
          if (choice?.finish_reason !== undefined && choice.finish_reason !== null) return;
        }
        throw call.truncated();
      } finally {
        call.close();
      }
    },
  };
}
