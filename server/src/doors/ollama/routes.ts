import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DoorRoute } from '../context';
import type { OllamaContext } from '.';
import { sendJson } from '../../http/writers';
import { ProviderError } from '../../providers';
import { listModels } from '../../providers';
import type { Ending, ReplySink } from '../../chat/service';
import type { PieceKind, ProviderConfig, ToolCall } from '../../providers/types';
import { type ChatAsk, chatProvider, collect, limitTextOnly, startChat } from '../door';
import { readJsonBody } from '../../http/request';
import { ollamaDialect, sendOllamaError } from './errors';
import { BatchedStream, NDJSON } from '../../http/writers';
import { parseOllamaChat, parseOllamaGenerate, type OllamaRequest } from './request';
import { errorLine, goTime, OllamaReply, type Shape } from './wire';
import { OLLAMA_PREFIX } from '../../protocol';

/**
 * An Ollama-compatible door: phone apps that speak only Ollama's API (with a bearer token or
 * custom headers) reach whatever provider is active on the desktop, with the pairing token.
 * Every route needs the token; the dialect words every refusal in Ollama's `{"error":"…"}`.
 * The `model` a client names is never used: the active provider and its model answer.
 */

export { OLLAMA_PREFIX };
type OllamaRoute = DoorRoute<OllamaContext>;

/** A model list need not wait as long as a reply may. */
const LIST_IDLE_MS = 30_000;

/** The model the desktop serves, whatever the client asked for; `auto` when the runner picks its first model. */
function modelName(provider: ProviderConfig): string {
  return provider.model ?? 'auto';
}

/** What DeskRelay cannot know about a model: honest empty values in Ollama's fields. */
const UNKNOWN_DETAILS = { parent_model: '', format: '', family: '', families: [], parameter_size: '', quantization_level: '' };

function routesUnder(prefix: string): OllamaRoute[] {
  const route = (method: OllamaRoute['method'], path: string, handle: OllamaRoute['handle']): OllamaRoute => ({ method, path: `${prefix}${path}`, auth: true, dialect: ollamaDialect, handle });
  return [
    route('GET', '/api/version', (_req, res, ctx) => sendJson(res, 200, { version: ctx.options.version })),
    route('GET', '/api/tags', tags),
    route('POST', '/api/show', show),
    route('POST', '/api/chat', (req, res, ctx) => reply('chat', parseOllamaChat, req, res, ctx)),
    route('POST', '/api/generate', (req, res, ctx) => reply('generate', parseOllamaGenerate, req, res, ctx)),
  ];
}

/** `GET /ollama`: Ollama's root answer, which some apps check before they accept a server. */
const runningRoute: OllamaRoute = {
  method: 'GET',
  path: OLLAMA_PREFIX,
  auth: true,
  dialect: ollamaDialect,
  handle(_req, res) {
    const body = 'Ollama is running';
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
    res.end(body);
  },
};

export const OLLAMA_ROUTES: readonly OllamaRoute[] = [...routesUnder(''), ...routesUnder(OLLAMA_PREFIX), runningRoute];

/**
 * `GET /api/tags`: the active provider's models as it lists them, the model in use first. What
 * only Ollama knows (size, digest, details) is empty; `modified_at` is the time of the answer.
 */
async function tags(req: IncomingMessage, res: ServerResponse, ctx: OllamaContext): Promise<void> {
  const provider = chatProvider(req, ctx);
  const left = new AbortController();
  res.once('close', () => left.abort());
  let names: string[];
  try {
    const deps = { keys: ctx.options.keys, idleTimeoutMs: Math.min(ctx.options.providerIdleMs, LIST_IDLE_MS) };
    names = await listModels(provider, deps, left.signal);
  } catch (err) {
    if (res.destroyed) return;
    if (!(err instanceof ProviderError)) throw err;
    return sendOllamaError(res, ctx.state(req).id, 502, err.message);
  }
  if (res.destroyed) return;
  const inUse = modelName(provider);
  if (inUse !== 'auto') names = [inUse, ...names.filter((n) => n !== inUse)];
  const modifiedAt = goTime();
  const models = names.map((name) => ({ name, model: name, modified_at: modifiedAt, size: 0, digest: '', details: UNKNOWN_DETAILS }));
  sendJson(res, 200, { models });
}

/** `POST /api/show`: enough for apps that ask before chatting; the model named in the body is not looked up. */
async function show(req: IncomingMessage, res: ServerResponse, ctx: OllamaContext): Promise<void> {
  await readJsonBody(req, ctx);
  // Still 412 without a usable provider, as the chat would be.
  chatProvider(req, ctx);
  // `tools`: the door carries tool calls to every provider kind (a model may still refuse them).
  sendJson(res, 200, { details: UNKNOWN_DETAILS, model_info: {}, capabilities: ['completion', 'tools'], modified_at: goTime() });
}

/** `/api/chat` and `/api/generate`: the same chat, in Ollama's two shapes. */
async function reply(shape: Shape, parse: (body: unknown) => OllamaRequest, req: IncomingMessage, res: ServerResponse, ctx: OllamaContext): Promise<void> {
  // Ollama sends photos as `"images":[…]` on a message (or beside the prompt).
  const { json, raw } = await readJsonBody(req, ctx, { images: /"images"\s*:\s*\[/ });
  const request = parse(json);
  limitTextOnly(raw.length, request.messages);
  const provider = chatProvider(req, ctx);
  const answer = new OllamaReply(shape, modelName(provider));
  // Nothing to generate: Ollama loads the model and says so; the provider needs no warming.
  if (request.messages.length === 0) return sendJson(res, 200, answer.loaded(request.unload ? 'unload' : 'load'));
  const ask = { provider, messages: request.messages, tools: request.tools };
  if (request.stream) streamReply(res, ctx, ask, answer);
  else await answerWhole(req, res, ctx, ask, answer);
}

/** Streamed (Ollama's default): one line per piece, then the `done` line, or an `{"error"}` line. */
function streamReply(res: ServerResponse, ctx: OllamaContext, ask: ChatAsk, answer: OllamaReply): void {
  const stream = new BatchedStream(res, NDJSON);
  // Returns once the chat started: the stream goes on in the chat service (startChat says why).
  startChat(res, ctx, ask, new ReplyLines(stream, answer), () => stream.open());
}

/**
 * The reply as NDJSON lines. One object rather than an object of closures over the stream (one
 * closure and its context per method, for every stream held: per-stream heap, bench/NOTES.md).
 */
class ReplyLines implements ReplySink {
  constructor(
    private readonly stream: BatchedStream,
    private readonly answer: OllamaReply,
  ) {}

  piece(kind: PieceKind, text: string): void {
    this.stream.write(this.answer.pieceLine(kind, text));
  }

  toolCall(call: ToolCall): void {
    this.stream.write(this.answer.toolCallLine(call));
  }

  flush(): void | Promise<void> {
    return this.stream.flush();
  }

  end(ending: Ending): void {
    this.stream.finish(ending.ok ? this.answer.doneLine(ending.finish) : errorLine(ending.message));
  }
}

/** `"stream":false`: one object once the reply is whole; a provider failure is a 502 with Ollama's error body. */
async function answerWhole(req: IncomingMessage, res: ServerResponse, ctx: OllamaContext, ask: ChatAsk, answer: OllamaReply): Promise<void> {
  const result = await collect(res, ctx, ask, answer);
  if (!result) return;
  if (result.ending.ok) return sendJson(res, 200, answer.whole(result.ending.finish));
  sendOllamaError(res, ctx.state(req).id, 502, result.ending.message);
}
