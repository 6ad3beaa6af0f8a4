import { adapterFor, acceptChat, runInSlot } from '../../chat/accept';
import type { Route } from '../../http/context';
import { runGeneration } from '../../chat/generation';
import { resumeHeaders } from '../resumable/headers';
import { serveResumable } from '../resumable/serve';
import { SseStream } from '../../http/sse';

export const chatStreamRoute: Route = {
  method: 'POST',
  path: '/v1/chat/stream',
  auth: true,
  async handle(req, res, ctx) {
    // Opt-in resumable streams (Idempotency-Key); without the header, exactly SPEC's stream.
    const resume = resumeHeaders(req);
    if (resume) return serveResumable(req, res, ctx, resume);

    const { messages, provider } = await acceptChat(req, ctx);
    const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
    const slot = runInSlot(ctx, (signal) => {
      sse.open();
      // The provider is asked only after the headers went out, so a slow cold start still shows a live stream.
      return runGeneration(adapterFor(provider, ctx), messages, signal, (event) => (sse.send(event) ? undefined : sse.drained()), ctx.options.logger);
    });
    // A client that goes away cancels the provider request at once: no more quota is spent.
    res.once('close', () => slot.controller.abort());
    await slot.result;
  },
};
