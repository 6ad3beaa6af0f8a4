import type { IncomingMessage, ServerResponse } from 'node:http';
import { authenticate } from '../../http/auth';
import { adapterFor, readChat, requireProvider, runInSlot } from '../../chat/accept';
import type { RelayContext, Route } from '../../http/context';
import { HttpError, internalError, serverStopping } from '../../http/errors';
import { runPieces } from '../../chat/generation';
import type { ChatMessage, ProviderConfig } from '../../providers/types';
import { sendJson } from '../../http/json';
import { SseStream } from '../../http/sse';
import { Completion, errorChunk, modelName } from './completion';
import { generationError, openAiError, sendOpenAiError } from './errors';
import { parseCompletionRequest } from './request';

/**
 * An OpenAI-compatible door on the same relay, so OpenAI SDKs and tools can use the desktop's
 * provider with the pairing token as their API key. It authenticates itself (instead of the
 * app's pipeline) so even a bad key is answered in OpenAI's error shape.
 */
function door(route: Omit<Route, 'auth'>): Route {
  return {
    ...route,
    auth: false,
    async handle(req, res, ctx) {
      try {
        const token = ctx.token;
        if (token === undefined) throw serverStopping();
        authenticate(req, token);
        await route.handle(req, res, ctx);
      } catch (err) {
        if (!(err instanceof HttpError)) {
          ctx.options.logger.error(`request ${ctx.state(req).id} failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
        }
        const httpError = err instanceof HttpError ? err : internalError();
        if (httpError.closeConnection) res.setHeader('Connection', 'close');
        sendOpenAiError(res, ctx.state(req).id, httpError.status, openAiError(httpError), httpError.headers);
      }
    },
  };
}

export const modelsRoute = door({
  method: 'GET',
  path: '/v1/models',
  handle(_req, res, ctx) {
    const active = ctx.options.providers.active();
    const data = active.ok ? [{ id: modelName(active.config), object: 'model', created: 0, owned_by: active.config.id }] : [];
    sendJson(res, 200, { object: 'list', data });
  },
});

export const completionsRoute = door({
  method: 'POST',
  path: '/v1/chat/completions',
  async handle(req, res, ctx) {
    let stream = false;
    const { messages } = await readChat(req, ctx, (body) => {
      const parsed = parseCompletionRequest(body);
      stream = parsed.stream;
      return parsed.messages;
    });
    const provider = requireProvider(req, ctx);
    const completion = new Completion(modelName(provider));
    await (stream ? streamCompletion : answerCompletion)(req, res, ctx, provider, messages, completion);
  },
});

async function streamCompletion(
  _req: IncomingMessage,
  res: ServerResponse,
  ctx: RelayContext,
  provider: ProviderConfig,
  messages: ChatMessage[],
  completion: Completion,
): Promise<void> {
  const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
  const slot = runInSlot(ctx, async (signal) => {
    sse.open();
    sse.write(completion.firstChunk());
    const outcome = await runPieces(adapterFor(provider, ctx), messages, signal, { piece: (p) => sse.paced(completion.pieceChunk(p)) }, ctx.options.logger);
    sse.finish(outcome.ok ? completion.lastChunk() : errorChunk(generationError(outcome.message)));
  });
  res.once('close', () => slot.controller.abort());
  await slot.result;
}

async function answerCompletion(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RelayContext,
  provider: ProviderConfig,
  messages: ChatMessage[],
  completion: Completion,
): Promise<void> {
  const slot = runInSlot(ctx, (signal) =>
    runPieces(adapterFor(provider, ctx), messages, signal, { piece: (p) => void completion.pieceChunk(p) }, ctx.options.logger),
  );
  res.once('close', () => slot.controller.abort());
  const outcome = await slot.result;
  if (res.destroyed) return;
  if (outcome.ok) return sendJson(res, 200, completion.message());
  // The provider failed: a gateway error. Retrying would spend quota on the same failure, so SDKs are told not to.
  sendOpenAiError(res, ctx.state(req).id, 502, generationError(outcome.message), { 'x-should-retry': 'false' });
}

export const OPENAI_ROUTES: readonly Route[] = [modelsRoute, completionsRoute];
