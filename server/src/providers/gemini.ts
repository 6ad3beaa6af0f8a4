import type { ProviderCall } from './call';
import { apiUrl, baseUrlOf, describeProvider } from './config';
import type { EventHandler } from './framing';
import { keyedCall, requireKey } from './keys';
import { toConversation, type Turn } from './turns';
import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, PieceSink, ProviderConfig } from './types';
import { keyRefused, providerMessage, statusText, type HttpFailure, type WordingContext } from './wording';

interface GeminiChunk {
  error?: unknown;
  candidates?: { content?: { parts?: { text?: unknown; thought?: unknown }[] }; finishReason?: unknown }[];
  promptFeedback?: { blockReason?: unknown };
}

/** Reasons that end a reply normally, as finish reasons; any other finishReason means Gemini cut it off. */
const NORMAL_FINISH: Record<string, FinishReason> = { STOP: 'stop', MAX_TOKENS: 'length' };

/**
 * Google refuses a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID, not 401 (also
 * on its OpenAI-compatible endpoint, in an array): worded as a refused key.
 */
export function geminiKeyRefusal(ctx: WordingContext, f: HttpFailure): string | undefined {
  const b = Array.isArray(f.body) ? f.body[0] : f.body;
  const details = (b as { error?: { details?: unknown } } | undefined)?.error?.details;
  const refused = Array.isArray(details) && details.some((d) => (d as { reason?: unknown } | null)?.reason === 'API_KEY_INVALID');
  return refused ? keyRefused(ctx, statusText(f)) : undefined;
}

/** `streamGenerateContent?alt=sse`; the end marker is a candidate carrying `finishReason`. */
export function geminiAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);
  const model = (config.model ?? '').replace(/^models\//, '');

  return {
    label,
    async run(messages: ChatMessage[], signal: AbortSignal, sink: PieceSink): Promise<FinishReason> {
      const key = await requireKey(config, deps, label);
      const ctx: WordingContext = { label, keyed: true, keyHint: deps.keys.howToSet(config) };
      const call = keyedCall(config, deps, label, signal, key, {
        model,
        explain: (f) => geminiKeyRefusal(ctx, f),
      });
      try {
        const { system, turns } = toConversation(messages);
        sink.model?.(model);
        const body: Record<string, unknown> = {
          contents: turns.map((t) => ({ role: t.role === 'assistant' ? 'model' : 'user', parts: geminiParts(t) })),
        };
        if (system !== undefined) body.systemInstruction = { parts: [{ text: system }] };
        if (config.maxTokens !== undefined) body.generationConfig = { maxOutputTokens: config.maxTokens };
        const res = await call.send(apiUrl(base, `/v1beta/models/${encodeURIComponent(model)}:streamGenerateContent?alt=sse`), {
          method: 'POST',
          headers: { 'x-goog-api-key': key, accept: 'text/event-stream' },
          body,
        });
        const reader = new GeminiReader(call, sink, label);
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
 * A turn's parts: each photo an `inline_data` part (`mime_type`, base64 `data`) before the text
 * part (Gemini API docs, "Image understanding", passing inline image data, REST:
 * https://ai.google.dev/gemini-api/docs/image-understanding#inline-image).
 */
function geminiParts(t: Turn): object[] {
  const parts: object[] = (t.images ?? []).map((i) => ({ inline_data: { mime_type: i.mediaType, data: i.data } }));
  if (t.content !== '' || parts.length === 0) parts.push({ text: t.content });
  return parts;
}

class GeminiReader implements EventHandler {
  finish: FinishReason | undefined;

  constructor(
    private readonly call: ProviderCall,
    private readonly sink: PieceSink,
    private readonly label: string,
  ) {}

  event(_type: string | undefined, data: string): boolean {
    const chunk = this.call.parseObject<GeminiChunk>(data);
    if (chunk.error !== undefined) throw this.call.streamError(providerMessage(chunk) ?? data);
    const blocked = chunk.promptFeedback?.blockReason;
    if (typeof blocked === 'string') throw this.call.fail(`${this.label} refused the prompt (blockReason ${blocked})`);
    const candidate = chunk.candidates?.[0];
    const parts = candidate?.content?.parts;
    if (Array.isArray(parts)) {
      for (const part of parts) {
        if (typeof part.text !== 'string' || part.text === '') continue;
        this.sink.piece(part.thought === true ? 'reasoning' : 'text', part.text);
      }
    }
    const finish = candidate?.finishReason;
    if (typeof finish !== 'string' || finish === '' || finish === 'FINISH_REASON_UNSPECIFIED') return false;
    const normal = NORMAL_FINISH[finish];
    if (normal === undefined) throw this.call.fail(`${this.label} stopped the reply early (finishReason ${finish})`);
    this.finish = normal;
    return true;
  }
}
