import type { IncomingMessage, ServerResponse } from 'node:http';
import { adapterFor, readChat, requireProvider, runInSlot } from '../../chat/accept';
import type { RelayContext, Route } from '../../http/context';
import type { Dialect } from '../../http/route';
import { runPieces } from '../../chat/generation';
import type { ChatMessage, ProviderConfig } from '../../providers/types';
import { sendJson } from '../../http/json';
import { SseStream } from '../../http/sse';
import { Completion, errorChunk, modelName } from './completion';
import { generationError, openAiError, sendOpenAiError } from './errors';
import { parseCompletionRequest } from './request';

/**
 * An OpenAI-compatible door on the same relay, so OpenAI SDKs and tools can use the desktop's
 * provider with the pairing token as their API key. The funnel admits its requests like any
 * other; its dialect words every refusal (a bad key included) in OpenAI's error shape.
 */
const openAiDialect: Dialect = {
  sendError: (res, requestId, err) => sendOpenAiError(res, requestId, err.status, openAiError(err), err.headers),
};

export const modelsRoute: Route = {
  method: 'GET',
  path: '/v1/models',
  auth: true,
  dialect: openAiDialect,
  handle(_req, res, ctx) {
    const active = ctx.options.providers.active();
    const data = active.ok ? [{ id: modelName(active.config), object: 'model', created: 0, owned_by: active.config.id }] : [];
    sendJson(res, 200, { object: 'list', data });
  },
};

export const completionsRoute: Route = {
  method: 'POST',
  path: '/v1/chat/completions',
  auth: true,
  dialect: openAiDialect,
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
};

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
