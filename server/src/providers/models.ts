import { wantsAutoModel } from './config';
import type { ProviderCall } from './call';
import type { ProviderConfig } from './types';

const CACHE_MS = 30_000;
const cache = new Map<string, { model: string; at: number }>();

export interface ModelListing {
  /** Cache key: the list URL is enough, one runner per URL. */
  url: string;
  headers: Record<string, string>;
  /** Model names from the runner's list document, in its order. */
  names(doc: unknown): string[];
  /** The message when the runner lists nothing, e.g. how to install a model. */
  emptyMessage: string;
}

/**
 * The model to ask for: the configured one, or for `model: "auto"` (or none) the first model the
 * runner lists. The choice is cached briefly, so a chat does not pay a round trip per message,
 * yet a newly pulled model is picked up soon.
 */
export async function resolveModel(call: ProviderCall, config: ProviderConfig, listing: ModelListing): Promise<string> {
  if (!wantsAutoModel(config)) return config.model!;
  const hit = cache.get(listing.url);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.model;
  const doc = await call.getJson(listing.url, listing.headers);
  const model = listing.names(doc)[0];
  if (!model) throw call.fail(listing.emptyMessage);
  cache.set(listing.url, { model, at: Date.now() });
  return model;
}

/** Tests and a "refresh" action start from a clean slate. */
export function clearModelCache(): void {
  cache.clear();
}

/** `names` helper: the string `field` of every object in `list`. */
export function pluck(list: unknown, field: string): string[] {
  if (!Array.isArray(list)) return [];
  return list
    .map((item) => (typeof item === 'object' && item !== null ? (item as Record<string, unknown>)[field] : undefined))
    .filter((v): v is string => typeof v === 'string' && v !== '');
}

/** The most one list request asks for (Anthropic's `limit` and Gemini's `pageSize` maximum). */
export const LIST_PAGE = 1000;

/** One model-list request through a chat's ProviderCall (so failures are worded as on a stream); names deduplicated. */
export async function fetchNames(call: ProviderCall, url: string, headers: Record<string, string>, names: (doc: unknown) => string[]): Promise<string[]> {
  try {
    return [...new Set(names(await call.getJson(url, headers)))];
  } finally {
    call.close();
  }
}

/** The `name` field of a list document, or undefined. */
export function field(doc: unknown, name: string): unknown {
  return typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)[name] : undefined;
}
