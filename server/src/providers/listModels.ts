/**
 * The models a provider offers, for every kind: what a client that lists models (the Ollama
 * door's `/api/tags`) shows. The request goes through the same ProviderCall as a chat, so an
 * unreachable provider, a refused key or a broken answer is worded exactly as on a stream.
 */
import { anthropicOverloaded } from './anthropic';
import type { ProviderCall } from './call';
import { apiUrl, baseUrlOf, describeProvider } from './config';
import { geminiKeyRefusal } from './gemini';
import { keyedCall, readKey, requireKey } from './keys';
import { pluck } from './models';
import type { AdapterDeps, ProviderConfig } from './types';
import type { WordingContext } from './wording';

/** Anthropic's `anthropic-version` header, as its adapter sends it. */
const ANTHROPIC_VERSION = '2023-06-01';
/** The most one list request asks for (Anthropic's `limit` and Gemini's `pageSize` maximum). */
const PAGE = 1000;

/**
 * The provider's model ids in the provider's order: Ollama's `/api/tags` names, an
 * OpenAI-compatible server's `/models` ids, Anthropic's `/v1/models` ids, and Gemini's models
 * that can generate content (without the `models/` prefix, as the adapter takes them). Rejects
 * with a ProviderError worded for the user; the `cloud` kind has no desktop models (empty).
 */
export async function listModels(config: ProviderConfig, deps: AdapterDeps, signal: AbortSignal = new AbortController().signal): Promise<string[]> {
  const base = baseUrlOf(config);
  const label = describeProvider(config);
  switch (config.kind) {
    case 'ollama': {
      // Ollama takes no key; its router's plain-text 404 means a wrong base URL, worded as such.
      const call = keyedCall(config, deps, label, signal, undefined, { keyHint: false, model: 'auto' });
      return fetchNames(call, apiUrl(base, '/api/tags'), {}, (doc) => pluck(field(doc, 'models'), 'name'));
    }
    case 'openai-compatible': {
      const key = await readKey(config, deps, label);
      const ctx: WordingContext = { label, keyed: Boolean(key), keyHint: deps.keys.howToSet(config) };
      const call = keyedCall(config, deps, label, signal, key, { model: 'auto', explain: (f) => geminiKeyRefusal(ctx, f) ?? anthropicOverloaded(label, f) });
      return fetchNames(call, apiUrl(base, '/models'), key ? { authorization: `Bearer ${key}` } : {}, (doc) => pluck(field(doc, 'data'), 'id'));
    }
    case 'anthropic': {
      const key = await requireKey(config, deps, label);
      const call = keyedCall(config, deps, label, signal, key, { model: 'auto', explain: (f) => anthropicOverloaded(label, f) });
      const headers = { 'x-api-key': key, 'anthropic-version': ANTHROPIC_VERSION };
      return fetchNames(call, apiUrl(base, `/v1/models?limit=${PAGE}`), headers, (doc) => pluck(field(doc, 'data'), 'id'));
    }
    case 'gemini': {
      const key = await requireKey(config, deps, label);
      const ctx: WordingContext = { label, keyed: true, keyHint: deps.keys.howToSet(config) };
      const call = keyedCall(config, deps, label, signal, key, { model: 'auto', explain: (f) => geminiKeyRefusal(ctx, f) });
      return fetchNames(call, apiUrl(base, `/v1beta/models?pageSize=${PAGE}`), { 'x-goog-api-key': key }, geminiNames);
    }
    case 'cloud':
      return [];
    case 'vscode-lm':
      // VS Code lists these itself (vscode.lm.selectChatModels); the server cannot see them.
      return [];
    default:
      throw new Error(`listModels: unknown provider kind "${(config as { kind: unknown }).kind}"`);
  }
}

async function fetchNames(
  call: ProviderCall,
  url: string,
  headers: Record<string, string>,
  names: (doc: unknown) => string[],
): Promise<string[]> {
  try {
    return [...new Set(names(await call.getJson(url, headers)))];
  } finally {
    call.close();
  }
}

function field(doc: unknown, name: string): unknown {
  return typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)[name] : undefined;
}

/** Gemini lists embedding and other models too; only those that answer generateContent can chat. */
function geminiNames(doc: unknown): string[] {
  const models = field(doc, 'models');
  if (!Array.isArray(models)) return [];
  return models
    .filter((m) => {
      const methods = (m as { supportedGenerationMethods?: unknown } | null)?.supportedGenerationMethods;
      return !Array.isArray(methods) || methods.includes('generateContent');
    })
    .map((m) => (m as { name?: unknown }).name)
    .filter((n): n is string => typeof n === 'string' && n !== '')
    .map((n) => n.replace(/^models\//, ''));
}
