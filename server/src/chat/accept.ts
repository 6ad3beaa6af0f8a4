import type { IncomingMessage } from 'node:http';
import { checkMediaType, parseJson, readBody } from '../http/body';
import { parseChatRequest } from './request';
import type { RelayContext } from '../http/context';
import { HttpError } from '../http/errors';
import { createAdapter } from '../providers';
import type { ActiveProvider, ChatAdapter, ChatMessage, ProviderConfig } from '../providers/types';

/**
 * The acceptance checks every chat entry point shares (SSE, resumable SSE, the OpenAI door,
 * the WebSocket), in CONTRACT §3's order after auth: media type → size → JSON → body →
 * provider → concurrency. Each entry point calls the pieces it needs, in that order.
 */

const SWITCH_HINT = 'Switch to a local provider on the desktop (DeskRelay: Select Provider, or "activeProvider" in config.json).';

export function noProviderError(active: Exclude<ActiveProvider, { ok: true }>): HttpError {
  const why =
    active.reason === 'cloud'
      ? `The active provider "${active.id}" is the DeskRelay cloud provider, which the phone uses directly, not through the desktop.`
      : active.reason === 'missing'
        ? `The active provider "${active.id}" is not configured on the desktop.`
        : 'No provider is active on the desktop.';
  return new HttpError(412, 'chat.no_provider', `${why} ${SWITCH_HINT}`);
}

export const tooManyStreams = (limit: number) =>
  new HttpError(429, 'chat.too_many_streams', `The desktop is already serving ${limit} chat streams; try again in a moment.`, { 'Retry-After': '1' });

/** Media type → size → JSON → body. `parse` turns the JSON into messages (the door maps OpenAI's shape first). */
export async function readChat(
  req: IncomingMessage,
  ctx: RelayContext,
  parse: (body: unknown) => ChatMessage[] = parseChatRequest,
): Promise<{ messages: ChatMessage[]; raw: Buffer }> {
  checkMediaType(req);
  const raw = await readBody(req, { timeoutMs: ctx.options.bodyTimeoutMs });
  return { messages: parse(parseJson(raw)), raw };
}

/** The provider this request will use, asked afresh (switching takes effect on the next request). */
export function requireProvider(req: IncomingMessage, ctx: RelayContext): ProviderConfig {
  const active = ctx.options.providers.active();
  if (!active.ok) throw noProviderError(active);
  ctx.state(req).provider = active.config.id;
  return active.config;
}

/** Everything before the 200 of `POST /v1/chat/stream` but the concurrency check. */
export async function acceptChat(req: IncomingMessage, ctx: RelayContext): Promise<{ messages: ChatMessage[]; provider: ProviderConfig; raw: Buffer }> {
  const { messages, raw } = await readChat(req, ctx);
  return { messages, provider: requireProvider(req, ctx), raw };
}

/** Built lazily by the generation, so the provider is asked only once the client has its answer headers. */
export function adapterFor(provider: ProviderConfig, ctx: RelayContext): () => ChatAdapter {
  const { keys, providerIdleMs } = ctx.options;
  return () => createAdapter(provider, { keys, idleTimeoutMs: providerIdleMs });
}

/**
 * Takes a concurrency slot and runs `run` in it (synchronously), or throws the 429. The slot is
 * freed when `run` settles; stop() aborts the signal.
 */
export function runInSlot<T>(ctx: RelayContext, run: (signal: AbortSignal) => Promise<T>): { controller: AbortController; result: Promise<T> } {
  const limit = ctx.options.maxConcurrentStreams();
  const slot = ctx.streams.tryRun(limit, run);
  if (!slot) throw tooManyStreams(limit);
  return slot;
}
