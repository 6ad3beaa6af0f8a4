import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JsonEventLog as AgentEventLog } from '../streams/frameLog';
import { carriesImages } from '../chat/request';
import type { ChatHandle, Ending, ReplySink } from '../chat/service';
import { HttpError } from '../http/errors';
import { checkMediaType, MAX_BODY_BYTES, parseJson, readBody, tooLarge } from '../http/body';
import { SseStream } from '../http/writers';
import type { ContextSlice, DoorRoute, RelayContext } from './context';
import { EVENT_ID_RE, HEADERS } from '../protocol';
import type { ChatMessage, PieceKind, ProviderConfig, ToolCall, ToolOptions } from '../providers/types';

/**
 * A door: one way in for clients (SPEC's SSE stream, resumable streams, the WebSocket, the
 * OpenAI API…). A door reads its own request shape, calls the chat service, and writes its own
 * wire format; state it keeps between requests (a resumable registry) lives in the door.
 */
export interface Door<C = RelayContext> {
  readonly routes: readonly DoorRoute<C>[];
  /** The relay is stopping and every chat was already cancelled: drop what the door holds. */
  stop?(): void | Promise<void>;
  /** The relay is about to stop, before any chat is cancelled: state kept on disk is saved as it is now. */
  beforeStop?(): Promise<void>;
}

/**
 * Makes a relay's instance of a door. `C` is the door's slice of the relay's context
 * (ContextSlice), declared in its folder with the door's own options: the relay's options are
 * its core ones plus every door's (doors/index.ts derives them from the list), so a new door is
 * its folder plus one line in doors/index.ts, options included.
 */
export type DoorFactory<C = RelayContext> = (ctx: C) => Door<C>;

/** What reading a request body takes: the relay's body budget and deadline. */
export type BodyContext = ContextSlice<'bodies', 'bodyTimeoutMs'>;

/** What running a chat for a response takes: the chat service, and the request's state (its provider, what its close aborts). */
export type ChatContext = ContextSlice<'chat' | 'state'>;

// What every door shares: reading its request body, and running a chat for a response.

/** A chat request carrying images may be this large (issue 13); every other request keeps MAX_BODY_BYTES. */
export const MAX_IMAGE_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Only a message whose content is an array can hold an image; a JSON string cannot hold this
 * byte sequence (its quotes are escaped), so a body without it in its first MiB is text only.
 */
const CONTENT_ARRAY = /"content"\s*:\s*\[/;

export interface BodyLimit {
  /**
   * The route takes chat requests that may carry images: up to MAX_IMAGE_BODY_BYTES when they do.
   * A RegExp is the route's own sign of images in the body's first MiB (Ollama's `"images":[`).
   */
  images?: boolean | RegExp;
}

/**
 * An HTTP door's request body, checked in CONTRACT's order after auth: media type → size →
 * JSON. `raw` is what resumable streams hash to tell a repeated request from a new one. With
 * `images`, the body may pass 1 MiB only while its first MiB shows content given as parts;
 * the door then calls `limitTextOnly` once it has parsed the messages.
 */
export async function readJsonBody(req: IncomingMessage, ctx: BodyContext, limit: BodyLimit = {}): Promise<{ json: unknown; raw: Buffer }> {
  checkMediaType(req);
  const marker = limit.images instanceof RegExp ? limit.images : CONTENT_ARRAY;
  const raw = await readBody(
    req,
    limit.images
      ? {
          timeoutMs: ctx.options.bodyTimeoutMs,
          budget: ctx.bodies,
          maxBytes: MAX_IMAGE_BODY_BYTES,
          softMaxBytes: MAX_BODY_BYTES,
          mayGrow: (prefix) => marker.test(prefix.toString('latin1')),
        }
      : { timeoutMs: ctx.options.bodyTimeoutMs, budget: ctx.bodies },
  );
  return { json: parseJson(raw), raw };
}

/**
 * The paths under one item of a door's collection that a client follows (an agent session, a
 * kept conversation): the item, its event stream, the messages posted to it, and stop.
 */
export function itemPaths(collection: string): { one: string; events: string; messages: string; stop: string; sub(name: string): string } {
  const one = `${collection}/:id`;
  const sub = (name: string) => `${one}/${name}`;
  return { one, events: sub('events'), messages: sub('messages'), stop: sub('stop'), sub };
}

/** 400 `request.invalid_body`, in the door's own words of what the body should be. */
export const invalidBody = (message: string) => new HttpError(400, 'request.invalid_body', message);

/** A parsed body that must be a JSON object; `shape` shows the client what is expected. */
export function jsonObject(json: unknown, shape: string): Record<string, unknown> {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw invalidBody(`The body must be a JSON object: ${shape}.`);
  return json as Record<string, unknown>;
}

/** 413 for a chat request over 1 MiB that carries no image after all (read whole, so the connection stays). */
export function limitTextOnly(size: number, messages: readonly ChatMessage[]): void {
  if (size > MAX_BODY_BYTES && !carriesImages(messages)) {
    throw tooLarge(MAX_BODY_BYTES, ` (only requests carrying images may be up to ${MAX_IMAGE_BODY_BYTES / 1024 / 1024} MiB)`, false);
  }
}

/** The provider this chat request gets (412 when none), noted for the request log line. */
export function chatProvider(req: IncomingMessage, ctx: ChatContext): ProviderConfig {
  const provider = ctx.chat.provider();
  ctx.state(req).provider = provider.id;
  return provider;
}

/** What a door asks the chat service for: one provider, the conversation, the tools the client offered. */
export interface ChatAsk {
  provider: ProviderConfig;
  messages: ChatMessage[];
  tools?: ToolOptions;
}

/** How a chat ended, and the model that answered (`auto` resolved) when the adapter named it. */
export interface ChatResult {
  ending: Ending;
  model: string | undefined;
}

/**
 * The one way a door starts a chat for a response: start it, `open` the response (headers out
 * before the provider is asked, so a cold model still shows a live stream), and abort it when
 * the client goes away (no more quota is spent). A 429 is thrown here, before anything is
 * written; past this point nothing throws (the sink gets the reply's one end), so a streamed
 * response's handler returns at once instead of waiting for the reply: a handler suspended
 * until the end kept its frame and its callers' (the funnel's, polka's) alive for every held
 * stream (per-stream heap, bench/NOTES.md).
 */
export function startChat(res: ServerResponse, ctx: ChatContext, ask: ChatAsk, sink: ReplySink, open?: () => void): ChatHandle {
  const chat = ctx.chat.start(ask.provider, ask.messages, sink, ask.tools);
  open?.();
  // The funnel's one shared `close` listener aborts it (no listener, no closure per stream).
  ctx.state(res.req).abortOnClose = chat;
  return chat;
}

/** A chat for a response whose door needs its end (a non-streamed answer): startChat, then the ending. */
export async function runChat(res: ServerResponse, ctx: ChatContext, ask: ChatAsk, sink: ReplySink): Promise<ChatResult> {
  const chat = startChat(res, ctx, ask, sink);
  const ending = await chat.done;
  return { ending, model: chat.model };
}

/** Where a non-streamed answer is kept whole (the OpenAI door's Completion, the Ollama door's reply). */
export interface Keeper {
  keep(kind: PieceKind, text: string): void;
  keepToolCall(call: ToolCall): void;
}

/** A non-streamed answer: the reply kept whole in `keeper`; undefined when the client left before it was. */
export async function collect(res: ServerResponse, ctx: ChatContext, ask: ChatAsk, keeper: Keeper): Promise<ChatResult | undefined> {
  const sink: ReplySink = {
    piece: (kind, text) => keeper.keep(kind, text),
    toolCall: (call) => keeper.keepToolCall(call),
    flush: () => undefined,
    end: () => undefined,
  };
  const result = await runChat(res, ctx, ask, sink);
  return res.destroyed ? undefined : result;
}

// What the doors that keep an event log share (agent sessions, kept conversations): following it.

/**
 * The `Last-Event-ID` a client resumes after (0: from the start); `what` names the stream in
 * the refusal of an id it never sent ("this session", "this conversation").
 */
export function lastEventId(req: IncomingMessage, last: number, what: string): number {
  const header = req.headers[HEADERS.lastEventId.toLowerCase()];
  if (header === undefined) return 0;
  if (typeof header !== 'string' || !EVENT_ID_RE.test(header.trim())) {
    throw new HttpError(400, 'request.invalid_header', 'The Last-Event-ID header must be the number of the last event received (the value of its "id:" line).');
  }
  const after = Number(header.trim());
  if (after > last) throw new HttpError(400, 'request.invalid_header', `The Last-Event-ID header says ${after}, but ${what} has only sent events up to ${last}.`);
  return after;
}

/**
 * Serves an event log as SSE: the events after `Last-Event-ID`, then live ones, with
 * keep-alives, until the client leaves or the log closes its listeners. Shared by the agent's
 * sessions and kept conversations (one event-log mechanism).
 */
export function followLog(req: IncomingMessage, res: ServerResponse, ctx: ContextSlice<never, 'keepAliveMs'>, log: AgentEventLog<object>, what: string): void {
  const after = lastEventId(req, log.lastId, what);
  const sse = new SseStream(res, { keepAliveMs: ctx.options.keepAliveMs });
  sse.open();
  sse.comment();
  const replay = log.since(after);
  // Unnumbered: it is about this resume, not an event of the stream.
  if (replay.missed) sse.write(`data: ${JSON.stringify({ type: 'error', message: replay.missed })}\n\n`);
  for (const frame of replay.frames) sse.write(frame.framed);
  const stopListening = log.listen({ push: (frame) => void sse.write(frame.framed), close: () => sse.finish('') });
  res.once('close', stopListening);
}
