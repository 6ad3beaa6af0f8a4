import { baseUrlOf, describeProvider } from './config';
import { saidIn } from './http';
import { keyedCall, requireKey } from './keys';
import { toConversation } from './turns';
import type { AdapterDeps, PullAdapter, ChatMessage, Piece, ProviderConfig } from './types';

/** Anthropic requires max_tokens; this fits any current Claude model's output limit. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 8192;
const API_VERSION = '2023-06-01';

interface AnthropicEvent {
  type?: unknown;
  delta?: { type?: unknown; text?: unknown; thinking?: unknown };
  error?: { type?: unknown; message?: unknown };
}

/** The Messages API with `stream: true`; the end marker is the `message_stop` event. */
export function anthropicAdapter(config: ProviderConfig, deps: AdapterDeps): PullAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);

  return {
    label,
    async *stream(messages: ChatMessage[], signal: AbortSignal): AsyncGenerator<Piece> {
      const key = await requireKey(config, deps, label);
      const call = keyedCall(config, deps, label, signal, key);
      try {
        const { system, turns } = toConversation(messages);
        const res = await call.send(`${base}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'anthropic-version': API_VERSION, accept: 'text/event-stream' },
          body: {
            model: config.model,
            max_tokens: config.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
            ...(system === undefined ? {} : { system }),
            messages: turns,
            stream: true,
          },
        });

        for await (const ev of call.events(res)) {
          const data = call.parseObject<AnthropicEvent>(ev.data);
          const type = data.type ?? ev.event;
          if (type === 'content_block_delta') {
            const d = data.delta;
            if (d?.type === 'text_delta' && typeof d.text === 'string' && d.text !== '') yield { kind: 'text', text: d.text };
            if (d?.type === 'thinking_delta' && typeof d.thinking === 'string' && d.thinking !== '') {
              yield { kind: 'reasoning', text: d.thinking };
            }
          } else if (type === 'error') {
            const kind = typeof data.error?.type === 'string' ? data.error.type : 'error';
            const said = saidIn(ev.data);
            throw kind === 'overloaded_error'
              ? call.fail(`${label} is overloaded: ${said}; try again shortly`)
              : call.streamError(`${said} (${kind})`);
          } else if (type === 'message_stop') {
            return;
          }
        }
        throw call.truncated();
      } finally {
        call.close();
      }
    },
  };
}
