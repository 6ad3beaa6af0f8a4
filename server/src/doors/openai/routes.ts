import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DoorRoute } from '../context';
import type { OpenAiContext } from '.';
import type { Dialect } from '../../http/route';
import type { Ending, ReplySink } from '../../chat/service';
import type { PieceKind, ToolCall } from '../../providers/types';
import { sendJson } from '../../http/writers';
import { SseStream } from '../../http/writers';
import { Completion, errorChunk, modelName } from './completion';
import { generationError, openAiError, sendOpenAiError } from './errors';
import { parseCompletionRequest } from './request';
import { type ChatAsk, chatProvider, collect, limitTextOnly, startChat } from '../door';
import { readJsonBody } from '../../http/request';
import { configuredProviders, leaving, modelsOf } from '../providers';

/**
 * An OpenAI-compatible door on the same relay, so OpenAI SDKs and tools can use the desktop's
 * provider with the pairing token as their API key. The funnel admits its requests like any
 * other; its dialect words every refusal (a bad key included) in OpenAI's error shape.
 */
export const openAiDialect: Dialect = {
  sendError: (res, requestId, err) => sendOpenAiError(res, requestId, err.status, openAiError(err), err.headers),
};

/** Every route of the door: behind the token (the client's API key), refusals in OpenAI's shape. */
const OPENAI_ROUTE = { auth: true, dialect: openAiDialect } as const;

export const modelsRoute: DoorRoute<OpenAiContext> = {
  ...OPENAI_ROUTE,
  method: 'GET',
  path: '/v1/models',
  /**
   * The models of the desktop's providers, as each lists them (the same lists as
   * `GET /v1/providers/<id>/models`), the active provider first with its configured model at the
   * top; `owned_by` is the provider id. A provider that does not answer shows its configured
   * model only. The model a client names is still ignored: the desktop's choice answers.
   */
  async handle(_req, res, ctx) {
    const source = ctx.options.providers;
    const active = source.active();
    const others = configuredProviders(source).filter((p) => p.kind !== 'cloud' && !(active.ok && p.id === active.config.id));
    const providers = active.ok ? [active.config, ...others] : others;
    const signal = leaving(res);
    const lists = await Promise.all(providers.map((p) => modelsOf(p, ctx, signal).catch(() => [] as string[])));
    const data: object[] = [];
    const seen = new Set<string>();
    providers.forEach((p, i) => {
      const configured = p.model !== undefined && p.model !== 'auto' ? [p.model] : [];
      for (const id of [...configured, ...lists[i]]) {
        if (seen.has(`${p.id}\n${id}`)) continue;
        seen.add(`${p.id}\n${id}`);
        data.push({ id, object: 'model', created: 0, owned_by: p.id });
      }
    });
    if (!res.destroyed) sendJson(res, 200, { object: 'list', data });
  },
};

export const completionsRoute: DoorRoute<OpenAiContext> = {
  ...OPENAI_ROUTE,
  method: 'POST',
  path: '/v1/chat/completions',
  async handle(req, res, ctx) {
    const { json, raw } = await readJsonBody(req, ctx, { images: true });
    const { messages, stream, tools } = parseCompletionRequest(json);
    limitTextOnly(raw.length, messages);
    const provider = chatProvider(req, ctx);
    const completion = new Completion(modelName(provider));
    const ask = { provider, messages, tools };
    if (stream) streamCompletion(res, ctx, ask, completion);
    else await answerCompletion(req, res, ctx, ask, completion);
  },
};

/**
 * `stream: true`: chat.completion.chunk events, then the finish reason and `[DONE]`, or an error
 * chunk and no `[DONE]`. The headers go out at once; the role chunk waits until the adapter names
 * the model that answers, so every chunk carries the same, real model.
 */
function streamCompletion(res: ServerResponse, ctx: OpenAiContext, ask: ChatAsk, completion: Completion): void {
  const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
  // Returns once the chat started: the stream goes on in the chat service (startChat says why).
  startChat(res, ctx, ask, new CompletionChunks(sse, completion), () => sse.open());
}

/**
 * The reply as chunks on the SSE stream. One object rather than an object of closures over the
 * stream (one closure and its context per method, for every stream held: per-stream heap,
 * bench/NOTES.md).
 */
class CompletionChunks implements ReplySink {
  private begun = false;

  constructor(
    private readonly sse: SseStream,
    private readonly completion: Completion,
  ) {}

  model(name: string): void {
    if (!this.begun) this.completion.model = name;
    this.begin();
  }

  piece(kind: PieceKind, text: string): void {
    this.begin();
    this.sse.write(this.completion.pieceChunk(kind, text));
  }

  toolCall(call: ToolCall): void {
    this.begin();
    this.sse.write(this.completion.toolCallChunks(call));
  }

  flush(): void | Promise<void> {
    return this.sse.flush();
  }

  end(ending: Ending): void {
    this.begin();
    this.sse.finish(ending.ok ? this.completion.lastChunk(ending.finish) : errorChunk(generationError(ending.message)));
  }

  /** The role chunk, once, before anything else. */
  private begin(): void {
    if (this.begun) return;
    this.begun = true;
    this.sse.write(this.completion.firstChunk());
  }
}

/** `stream: false`: one chat.completion once the reply is whole; a provider failure is a 502. */
async function answerCompletion(req: IncomingMessage, res: ServerResponse, ctx: OpenAiContext, ask: ChatAsk, completion: Completion): Promise<void> {
  const result = await collect(res, ctx, ask, completion);
  if (!result) return;
  if (result.model !== undefined) completion.model = result.model;
  if (result.ending.ok) return sendJson(res, 200, completion.message(result.ending.finish));
  // The provider failed: a gateway error. Retrying would spend quota on the same failure, so SDKs are told not to.
  sendOpenAiError(res, ctx.state(req).id, 502, generationError(result.ending.message), { 'x-should-retry': 'false' });
}

export const OPENAI_ROUTES: readonly DoorRoute<OpenAiContext>[] = [modelsRoute, completionsRoute];
