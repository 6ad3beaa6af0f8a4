import { baseUrlOf, describeProvider } from './config';
import { providerMessage } from './http';
import { keyedCall, requireKey } from './keys';
import { toConversation } from './turns';
import type { AdapterDeps, PullAdapter, ChatMessage, Piece, ProviderConfig } from './types';

interface GeminiChunk {
  error?: unknown;
  candidates?: { content?: { parts?: { text?: unknown; thought?: unknown }[] }; finishReason?: unknown }[];
  promptFeedback?: { blockReason?: unknown };
}

/** Reasons that end a reply normally; any other finishReason means Gemini cut it off. */
const NORMAL_FINISH = new Set(['STOP', 'MAX_TOKENS']);

/** `streamGenerateContent?alt=sse`; the end marker is a candidate carrying `finishReason`. */
export function geminiAdapter(config: ProviderConfig, deps: AdapterDeps): PullAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);
  const model = (config.model ?? '').replace(/^models\//, '');

  return {
    label,
    async *stream(messages: ChatMessage[], signal: AbortSignal): AsyncGenerator<Piece> {
      const key = await requireKey(config, deps, label);
      const call = keyedCall(config, deps, label, signal, key, model);
      try {
        const { system, turns } = toConversation(messages);
        const body: Record<string, unknown> = {
          contents: turns.map((t) => ({ role: t.role === 'assistant' ? 'model' : 'user', parts: [{ text: t.content }] })),
        };
        if (system !== undefined) body.systemInstruction = { parts: [{ text: system }] };
        if (config.maxTokens !== undefined) body.generationConfig = { maxOutputTokens: config.maxTokens };
        const res = await call.send(`${base}/v1beta/models/${encodeURIComponent(model)}:streamGenerateContent?alt=sse`, {
          method: 'POST',
          headers: { 'x-goog-api-key': key, accept: 'text/event-stream' },
          body,
        });

        for await (const ev of call.events(res)) {
          const chunk = call.parseObject<GeminiChunk>(ev.data);
          if (chunk.error !== undefined) throw call.streamError(providerMessage(chunk) ?? ev.data);
          const blocked = chunk.promptFeedback?.blockReason;
          if (typeof blocked === 'string') throw call.fail(`${label} refused the prompt (blockReason ${blocked})`);
          const candidate = chunk.candidates?.[0];
          for (const part of candidate?.content?.parts ?? []) {
            if (typeof part.text !== 'string' || part.text === '') continue;
            yield { kind: part.thought === true ? 'reasoning' : 'text', text: part.text };
          }
          const finish = candidate?.finishReason;
          if (typeof finish === 'string' && finish !== '' && finish !== 'FINISH_REASON_UNSPECIFIED') {
            if (NORMAL_FINISH.has(finish)) return;
            throw call.fail(`${label} stopped the reply early (finishReason ${finish})`);
          }
        }
        throw call.truncated();
      } finally {
        call.close();
      }
    },
  };
}
