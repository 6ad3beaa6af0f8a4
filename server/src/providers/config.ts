import { PROVIDER_KINDS, type ProviderConfig, type ProviderKind } from './types';

const DEFAULT_BASE_URL: Partial<Record<ProviderKind, string>> = {
  ollama: 'http://127.0.0.1:11434',
  anthropic: 'https://api.anthropic.com',
  gemini: 'https://generativelanguage.googleapis.com',
};

const KIND_NAME: Record<ProviderKind, string> = {
  ollama: 'Ollama',
  'openai-compatible': 'OpenAI-compatible server',
  anthropic: 'Anthropic',
  gemini: 'Gemini',
  'vscode-lm': "VS Code's language models",
  cloud: 'DeskRelay cloud',
};

/** Kinds that can list their models, so `model: "auto"` (or no model) means "the first one". */
const LISTS_MODELS: readonly ProviderKind[] = ['ollama', 'openai-compatible'];

/**
 * The base URL in use, without trailing slashes, so adapters can append their own paths (with
 * apiUrl). It keeps any credentials written into it: they are sent, never shown.
 */
export function baseUrlOf(config: ProviderConfig): string {
  const url = config.baseUrl ?? DEFAULT_BASE_URL[config.kind] ?? '';
  return url.replace(/\/+$/, '');
}

/**
 * `base` + `path`, the path going before any query string of the base URL (`?api-version=…`
 * stays at the end, where a server reads it).
 */
export function apiUrl(base: string, path: string): string {
  const q = base.search(/[?#]/);
  if (q === -1) return base + path;
  return base.slice(0, q).replace(/\/+$/, '') + path + base.slice(q);
}

/**
 * `Ollama at http://127.0.0.1:11434`: how every message names a provider. Credentials in the
 * base URL (`user:password@`, a query string such as `?api-key=…`, a fragment) are left out:
 * the label reaches the phone (security review, issue 18 #6).
 */
export function describeProvider(config: ProviderConfig): string {
  const url = shownUrl(baseUrlOf(config));
  return url ? `${KIND_NAME[config.kind]} at ${url}` : KIND_NAME[config.kind];
}

/** The URL as the user wrote it when it carries nothing secret; otherwise scheme, host and path only. */
function shownUrl(url: string): string {
  if (!/[@?#]/.test(url)) return url;
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`.replace(/\/+$/, '');
  } catch {
    // Not a URL (validateProviderConfig refuses those): show none of it rather than a secret.
    return '(an invalid base URL)';
  }
}

/**
 * What the base URL holds that must never reach a message: the user name and password (as
 * written and decoded) and every query value. Redacted from provider text that echoes them.
 */
export function baseUrlSecrets(config: ProviderConfig): string[] {
  const url = baseUrlOf(config);
  if (!/[@?#]/.test(url)) return [];
  try {
    const u = new URL(url);
    const out = [u.username, u.password, decodeURIComponent(u.username), decodeURIComponent(u.password)];
    for (const [, value] of u.searchParams) out.push(value);
    return [...new Set(out.filter((s) => s.length >= 4))];
  } catch {
    return [];
  }
}

// The helpers each kind's model listing shares.

/** `names` helper: the string `field` of every object in `list`. */
export function pluck(list: unknown, field: string): string[] {
  if (!Array.isArray(list)) return [];
  return list
    .map((item) => (typeof item === 'object' && item !== null ? (item as Record<string, unknown>)[field] : undefined))
    .filter((v): v is string => typeof v === 'string' && v !== '');
}

/** The most one list request asks for (Anthropic's `limit` and Gemini's `pageSize` maximum). */
export const LIST_PAGE = 1000;

/** The `name` field of a list document, or undefined. */
export function field(doc: unknown, name: string): unknown {
  return typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)[name] : undefined;
}

/**
 * Checks one provider record from a config file or settings and returns a clean copy holding
 * only the known fields. `where` names the record in messages, e.g. `providers[2]`.
 */
export function validateProviderConfig(x: unknown, where: string): ProviderConfig {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new Error(`${where} must be an object`);
  const r = x as Record<string, unknown>;

  if (typeof r.id !== 'string' || r.id.trim() === '') throw new Error(`${where}.id must be a non-empty string`);
  if (typeof r.kind !== 'string' || !(PROVIDER_KINDS as readonly string[]).includes(r.kind)) {
    throw new Error(`${where}.kind must be one of ${PROVIDER_KINDS.join(', ')}`);
  }
  const kind = r.kind as ProviderKind;
  const out: ProviderConfig = { id: r.id, kind };

  if ('apiKey' in r || 'key' in r) {
    throw new Error(`${where} must not hold an API key; name the environment variable that holds it in apiKeyEnv`);
  }
  if (r.baseUrl !== undefined && kind === 'vscode-lm') {
    throw new Error(`${where}.baseUrl has no meaning for kind vscode-lm (VS Code's own models); select the model with "model" (vendor/family/id)`);
  }
  if (r.baseUrl !== undefined) {
    if (typeof r.baseUrl !== 'string' || !isHttpUrl(r.baseUrl)) throw new Error(`${where}.baseUrl must be an http(s) URL`);
    out.baseUrl = r.baseUrl;
  } else if (kind === 'openai-compatible') {
    throw new Error(`${where}.baseUrl is required for kind openai-compatible (for example http://127.0.0.1:1234/v1)`);
  }
  if (r.model !== undefined) {
    if (typeof r.model !== 'string' || r.model.trim() === '') throw new Error(`${where}.model must be a non-empty string`);
    out.model = r.model;
  }
  if (kind === 'anthropic' || kind === 'gemini') {
    if (out.model === undefined || out.model === 'auto') {
      throw new Error(`${where}.model must name a model for kind ${kind} ("auto" works only for ${LISTS_MODELS.join(' and ')})`);
    }
  }
  if (r.apiKeyEnv !== undefined) {
    if (typeof r.apiKeyEnv !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(r.apiKeyEnv)) {
      throw new Error(`${where}.apiKeyEnv must be an environment variable name such as OPENAI_API_KEY`);
    }
    out.apiKeyEnv = r.apiKeyEnv;
  }
  if (r.maxTokens !== undefined) {
    if (typeof r.maxTokens !== 'number' || !Number.isInteger(r.maxTokens) || r.maxTokens < 1) {
      throw new Error(`${where}.maxTokens must be a positive integer`);
    }
    out.maxTokens = r.maxTokens;
  }
  if (r.contextLength !== undefined) {
    if (typeof r.contextLength !== 'number' || !Number.isInteger(r.contextLength) || r.contextLength < 256) {
      throw new Error(`${where}.contextLength must be the model's context length in tokens (an integer, at least 256)`);
    }
    out.contextLength = r.contextLength;
  }
  return out;
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}
