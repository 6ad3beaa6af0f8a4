import type { ProviderCall } from './call';
import { anthropicOverloaded } from './anthropic';
import { apiUrl, baseUrlOf, describeProvider } from './config';
import type { EventHandler } from './framing';
import { geminiKeyRefusal } from './gemini';
import { keyedCall, readKey } from './keys';
import { pluck, resolveModel } from './models';
import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, PieceSink, ProviderConfig } from './types';
import { providerMessage, saidIn } from './wording';

interface Chunk {
  object?: unknown;
  message?: unknown;
  error?: unknown;
  choices?: { delta?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown }; finish_reason?: unknown }[];
}

/**
 * `/chat/completions` SSE as served by OpenAI, LM Studio, llama.cpp, vLLM, Jan, OpenRouter, Groq,
 * DeepSeek… The end marker is a chunk with a non-null `finish_reason` (`stop`, `length`,
 * `content_filter`, `tool_calls` or the server's own word), or `data: [DONE]`.
 */
export function openAiCompatibleAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);

  return {
    label,
    async run(messages: ChatMessage[], signal: AbortSignal, sink: PieceSink): Promise<FinishReason> {
      // Local servers (LM Studio, llama.cpp) take no key; send one only when the user set one.
      const key = await readKey(config, deps, label);
      const auth: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
      const ctx = { label, keyed: Boolean(key), keyHint: deps.keys.howToSet(config) };
      // Gateways speak for the providers behind them: Google's OpenAI-compatible endpoint refuses
      // a bad key the Gemini way, and a gateway in front of Anthropic passes its 529 on.
      const call = keyedCall(config, deps, label, signal, key, { explain: (f) => geminiKeyRefusal(ctx, f) ?? anthropicOverloaded(label, f) });
      try {
        call.model = await resolveModel(call, config, {
          url: apiUrl(base, '/models'),
          headers: auth,
          names: (doc) => pluck((doc as { data?: unknown } | null)?.data, 'id'),
          emptyMessage: `no models are loaded on ${label}; load or download one in the server first`,
        });
        sink.model?.(call.model);
        const body: Record<string, unknown> = { model: call.model, messages: messages.map(openAiMessage), stream: true };
        if (config.maxTokens !== undefined) body.max_tokens = config.maxTokens;
        const res = await call.send(apiUrl(base, '/chat/completions'), {
          method: 'POST',
          headers: { ...auth, accept: 'text/event-stream' },
          body,
        });
        const reader = new OpenAiReader(call, sink);
        await call.events(res, reader, sink);
        if (reader.finish === undefined) throw call.truncated();
        return reader.finish;
      } finally {
        call.close();
      }
    },
  };
}

/**
 * A message as `/chat/completions` takes it: with photos, content is an array of `image_url`
 * parts holding data URLs, then the text part (OpenAI docs, "Images and vision", Base64-encoded
 * images: https://platform.openai.com/docs/guides/images-vision#giving-a-model-images-as-input).
 */
function openAiMessage(m: ChatMessage): { role: string; content: string | object[] } {
  if (!m.images?.length) return { role: m.role, content: m.content };
  const parts: object[] = m.images.map((i) => ({ type: 'image_url', image_url: { url: `data:${i.mediaType};base64,${i.data}` } }));
  if (m.content !== '') parts.push({ type: 'text', text: m.content });
  return { role: m.role, content: parts };
}

class OpenAiReader implements EventHandler {
  finish: FinishReason | undefined;

  constructor(
    private readonly call: ProviderCall,
    private readonly sink: PieceSink,
  ) {}

  event(type: string | undefined, data: string): boolean {
    // Old llama.cpp servers report failures in an `error:` SSE field.
    if (type === 'error') throw this.call.streamError(saidIn(data));
    if (data.trim() === '[DONE]') {
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
    }
    const finish = choice.finish_reason;
    if (finish === undefined || finish === null) return false;
    this.finish = typeof finish === 'string' && finish !== '' ? finish : 'stop';
    return true;
  }
}
