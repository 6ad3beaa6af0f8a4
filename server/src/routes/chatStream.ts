import type { IncomingMessage } from 'node:http';
import { checkMediaType, parseJson, readBody } from '../body';
import { parseChatRequest } from '../chatRequest';
import type { RelayContext, Route } from '../context';
import { HttpError } from '../errors';
import { runGeneration } from '../generation';
import { createAdapter } from '../providers';
import type { ActiveProvider, ChatMessage, ProviderConfig } from '../providers/types';
import { SseStream } from '../sse';

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

/** Everything before the 200, in CONTRACT §3's order (route and auth were checked by the app). */
export async function acceptChat(req: IncomingMessage, ctx: RelayContext): Promise<{ messages: ChatMessage[]; provider: ProviderConfig; raw: Buffer }> {
  checkMediaType(req);
  const raw = await readBody(req, { timeoutMs: ctx.options.bodyTimeoutMs });
  const messages = parseChatRequest(parseJson(raw));
  const active = ctx.options.providers.active();
  if (!active.ok) throw noProviderError(active);
  ctx.state(req).provider = active.config.id;
  return { messages, provider: active.config, raw };
}

export const tooManyStreams = (limit: number) =>
  new HttpError(429, 'chat.too_many_streams', `The desktop is already serving ${limit} chat streams; try again in a moment.`, { 'Retry-After': '1' });

export const chatStreamRoute: Route = {
  method: 'POST',
  path: '/v1/chat/stream',
  auth: true,
  async handle(req, res, ctx) {
    const { messages, provider } = await acceptChat(req, ctx);
    const { options } = ctx;
    const limit = options.maxConcurrentStreams();
    const sse = new SseStream(res, { keepAliveMs: options.keepAliveMs });
    const slot = ctx.streams.tryRun(limit, (signal) => {
      sse.open();
      // The provider is asked only after the headers went out, so a slow cold start still shows a live stream.
      const adapter = () => createAdapter(provider, { keys: options.keys, idleTimeoutMs: options.providerIdleMs });
      return runGeneration(adapter, messages, signal, (event) => (sse.send(event) ? undefined : sse.drained()), options.logger);
    });
    if (!slot) throw tooManyStreams(limit);
    // A client that goes away cancels the provider request at once: no more quota is spent.
    res.once('close', () => slot.controller.abort());
    await slot.result;
  },
};
