import type { ProviderConfig } from './types';

/**
 * The model's context length as its provider says it, when it does: Ollama's `POST /api/show`
 * (`model_info["<architecture>.context_length"]`), an OpenAI-compatible server's `GET /models`
 * entry for the model (`context_length`, as OpenRouter gives it, or `max_context_length`, as LM
 * Studio's model listing does). Undefined when it does not say, or cannot be asked.
 */
export async function providerContextLength(config: ProviderConfig, key: string | undefined, signal: AbortSignal): Promise<number | undefined> {
  const model = config.model;
  if (!config.baseUrl || !model || model === 'auto') return undefined;
  const base = config.baseUrl.replace(/\/+$/, '');
  try {
    if (config.kind === 'ollama') {
      const res = await fetch(`${base}/api/show`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model }), signal });
      if (!res.ok) return undefined;
      const info = ((await res.json()) as { model_info?: Record<string, unknown> }).model_info ?? {};
      return positive(Object.entries(info).find(([k]) => k.endsWith('.context_length'))?.[1]);
    }
    if (config.kind === 'openai-compatible') {
      const res = await fetch(`${base}/models`, { headers: key ? { Authorization: `Bearer ${key}` } : {}, signal });
      if (!res.ok) return undefined;
      const data = ((await res.json()) as { data?: Record<string, unknown>[] }).data;
      const entry = Array.isArray(data) ? data.find((m) => m?.id === model) : undefined;
      return positive(entry?.context_length) ?? positive(entry?.max_context_length);
    }
  } catch {
    return undefined;
  }
  return undefined;
}

const positive = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);
