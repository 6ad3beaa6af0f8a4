import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { HttpError } from '../errors';
import { EVENT_ID_RE, HEADERS, type ChatEvent, type TerminalEvent } from '../protocol';
import { requestState } from './request';

// The relay's response writers: a whole JSON answer, a streamed one (SSE, NDJSON), and an event
// log followed as SSE.

export type HeaderMap = Readonly<Record<string, string | number>>;

/**
 * The one JSON writer: every JSON answer (results, CONTRACT errors, OpenAI errors, refused
 * handshakes, requests Node could not parse) gets the same framing, so a fix to it is made once.
 * The caller's headers go first; the framing headers always win.
 */
function jsonFraming(body: string): HeaderMap {
  return { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' };
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: HeaderMap = {}): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  for (const [name, v] of Object.entries({ ...headers, ...jsonFraming(body) })) res.setHeader(name, v);
  res.end(body);
}

/** 204: done, nothing to say (a delete, an answered action). */
export function sendNoContent(res: ServerResponse): void {
  res.statusCode = 204;
  res.setHeader('Cache-Control', 'no-store');
  res.end();
}

/**
 * The same answer written on a socket no ServerResponse owns (a refused WebSocket handshake, a
 * request Node could not parse). Nothing more is read from such a socket, so it always closes.
 */
export function writeJsonToSocket(socket: Duplex, status: number, value: unknown, headers: HeaderMap = {}): void {
  const body = JSON.stringify(value);
  const head = Object.entries({ ...headers, ...jsonFraming(body), Connection: 'close' })
    .map(([name, v]) => `${name}: ${v}`)
    .join('\r\n');
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head}\r\n\r\n${body}`);
}

/** How a stream's bytes are labelled and kept alive: SSE and NDJSON differ only in this. */
export interface Framing {
  contentType: string;
  /** Written when the stream has been silent for the keep-alive interval; none for a framing without comments. */
  keepAlive?: string;
}

export const SSE: Framing = { contentType: 'text/event-stream; charset=utf-8', keepAlive: ': \n\n' };
/** NDJSON has no comment line: nothing is written while the provider is silent. */
export const NDJSON: Framing = { contentType: 'application/x-ndjson' };

export const KEEP_ALIVE_MS = 15_000;

/**
 * The one writer of a streamed response: it owns the headers, the batching, the keep-alive and
 * the rule that exactly one last frame ends the response. Nothing else writes to `res`.
 */
export class BatchedStream {
  private lastWritten = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly keepAliveMs: number;
  /**
   * Frames written in the current tick, sent as one write when the tick ends. A provider read
   * often holds hundreds of tokens: one res.write each meant three iovecs each in one writev,
   * and the kernel's per-iovec cost dominated the relay's CPU (bench/NOTES.md). No frame waits
   * longer than it did before: Node's own cork also held them until the end of the tick.
   */
  private pending = '';

  constructor(
    protected readonly res: ServerResponse,
    private readonly framing: Framing,
    keepAliveMs = KEEP_ALIVE_MS,
  ) {
    this.keepAliveMs = keepAliveMs;
    // The listener and the tick and timer callbacks below are functions shared by every stream,
    // given the stream as an argument (or finding it on its request state): a closure each held
    // a context and, for `once`, a wrapper per stream (per-stream heap, bench/NOTES.md).
    requestState(res.req).writer = this;
    res.on('close', BatchedStream.closed);
  }

  /** `process.nextTick`'s callback: the tick's frames go out as one write. */
  private static flushTick(this: void, stream: BatchedStream): void {
    stream.flushPending();
  }

  /** The keep-alive timer's callback. */
  private static keepAliveTick(this: void, stream: BatchedStream): void {
    stream.keepAlive();
  }

  /** A response's `close` listener (a response closes once). */
  private static closed(this: ServerResponse): void {
    requestState(this.req).writer?.stopKeepAlive();
  }

  private flushPending(): void {
    if (this.pending === '') return;
    const data = this.pending;
    this.pending = '';
    if (this.ended) return;
    // The keep-alive interval restarts when bytes are written: once per batch, not per frame.
    this.timer?.refresh();
    this.put(data);
  }

  /** Ends the response with the framing's terminal error event, for a framing that has one (SSE's). */
  error?(message: string): void;

  /** Sends the 200 and its headers at once, before the provider has said anything. */
  open(extraHeaders: Record<string, string> = {}): void {
    const res = this.res;
    res.statusCode = 200;
    res.setHeader('Content-Type', this.framing.contentType);
    // Proxies must neither buffer nor compress the stream (nginx honours X-Accel-Buffering).
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    for (const [name, value] of Object.entries(extraHeaders)) res.setHeader(name, value);
    res.flushHeaders();
    // Small writes must leave at once: Nagle would hold a token back waiting for an ACK.
    res.socket?.setNoDelay(true);
    if (this.framing.keepAlive !== undefined) this.timer = setTimeout(BatchedStream.keepAliveTick, this.keepAliveMs, this);
  }

  /** True once the last frame was written or the client went away. */
  get ended(): boolean {
    return this.lastWritten || this.res.destroyed;
  }

  /** Queues framed bytes for this tick's write; returns false when the client is not keeping up. */
  write(chunk: string): boolean {
    if (this.ended) return true;
    if (chunk !== '') {
      if (this.pending === '') process.nextTick(BatchedStream.flushTick, this);
      this.pending += chunk;
    }
    return this.pending.length < this.res.writableHighWaterMark && !this.needsDrain;
  }

  /**
   * Writes framed bytes and, when the client is not keeping up, returns the wait for it: a
   * replay awaits this before writing more, so a slow reader is paced instead of growing a buffer.
   */
  paced(chunk: string): void | Promise<void> {
    return chunk === '' || this.write(chunk) ? undefined : this.drained();
  }

  /**
   * Hands bytes to the connection. res.write would frame them as a chunk in four pieces (size,
   * CRLF, data, CRLF) that leave as one writev of four iovecs: with one provider read per token
   * at a model's pace, that writev was a third of the relay's CPU (bench/NOTES.md, issue 10).
   * When the response owns its socket and is chunked, the same bytes go as one string in one
   * write; otherwise (no socket yet behind a pipelined response, HTTP/1.0, HEAD) res.write does.
   */
  private put(data: string): void {
    const socket = this.res.socket;
    if (this.res.chunkedEncoding && socket && socket.writable && !this.res.writableEnded) {
      socket.write(`${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`);
    } else this.res.write(data);
  }

  /** True while the client has not taken what was written (on the response or, written directly, on its socket). */
  private get needsDrain(): boolean {
    return this.res.writableNeedDrain || (this.res.socket?.writableNeedDrain ?? false);
  }

  /**
   * Sends what was written so far as one write (a provider read's tokens leave together) and,
   * when the client is not keeping up, returns the wait for it: the chat service reads nothing
   * more from the provider until it settles, so a slow reader paces the provider.
   */
  flush(): void | Promise<void> {
    this.flushPending();
    if (this.ended || !this.needsDrain) return undefined;
    return this.drained();
  }

  /** Writes the last frame (once; later calls do nothing) and ends the response. */
  finish(framed: string): void {
    if (this.ended) return;
    this.lastWritten = true;
    this.stopKeepAlive();
    const data = this.pending + framed;
    this.pending = '';
    this.res.end(data);
  }

  /** Resolves when the client has drained what we wrote, or is gone. */
  drained(): Promise<void> {
    this.flushPending();
    if (this.ended || !this.needsDrain) return Promise.resolve();
    const socket = this.res.socket;
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done).off('close', done);
        socket?.off('drain', done);
        resolve();
      };
      this.res.on('drain', done).on('close', done);
      socket?.on('drain', done);
    });
  }

  /** The framing's comment (SSE's `: `), which clients ignore: proof that bytes get through. */
  comment(): void {
    if (this.framing.keepAlive !== undefined) this.write(this.framing.keepAlive);
  }

  private keepAlive(): void {
    if (this.ended) return;
    this.flushPending();
    this.put(this.framing.keepAlive!);
    this.timer?.refresh();
  }

  private stopKeepAlive(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** The SPEC events this writer frames (the vocabulary is the protocol's; chat/events.ts says what they mean). */
export type StreamEvent = ChatEvent;

export interface SseOptions {
  keepAliveMs?: number;
}

/** The exact bytes of one event: `[id: n\n]data: <compact json>\n\n`. */
export function frameEvent(event: StreamEvent, id?: number): string {
  if (event.type === 'token') return frameToken(event.delta, id);
  const data = `data: ${JSON.stringify(event)}\n\n`;
  return id === undefined ? data : `id: ${id}\n${data}`;
}

/** A token event's bytes, without building the event object: tokens are most of a stream. */
export function frameToken(delta: string, id?: number): string {
  const data = `data: {"type":"token","delta":${JSON.stringify(delta)}}\n\n`;
  return id === undefined ? data : `id: ${id}\n${data}`;
}

/**
 * A chat stream as SSE: the batched writer with SSE's framing, writing SPEC events (it is the
 * SPEC reply's writer itself: chat/specReply.ts's SpecEventWriter, matched by shape, as http
 * imports nothing of chat). A failure after the headers went out ends it with its one terminal
 * `error` event (the funnel finds it on the request state as its writer).
 */
export class SseStream extends BatchedStream {
  constructor(res: ServerResponse, options: SseOptions = {}) {
    super(res, SSE, options.keepAliveMs);
  }

  /** Writes one event; a terminal one ends the response. False means: wait for drained(). */
  send(event: StreamEvent, id?: number): boolean {
    if (event.type !== 'token') {
      this.finish(frameEvent(event, id));
      return true;
    }
    return event.delta === '' || this.write(frameEvent(event, id));
  }

  token(delta: string): boolean {
    return delta === '' || this.write(frameToken(delta));
  }

  terminal(event: TerminalEvent): void {
    this.send(event);
  }

  done(content: string): void {
    this.send({ type: 'done', content });
  }

  override error(message: string): void {
    this.send({ type: 'error', message });
  }
}

// Following an event log (an agent session's, a kept conversation's): replay, then live frames.

/** A log of numbered, framed events as its follower reads it (the agent's sessions', the kept conversations'). */
export interface FollowedLog {
  readonly lastId: number;
  /** The frames after `after`; `missed` says when some were already dropped. */
  since(after: number): { frames: readonly { framed: string }[]; missed?: string };
  /** Live frames from now on, until the log closes its listeners; returns what stops listening. */
  listen(listener: { push(frame: { framed: string }): void; close(): void }): () => void;
}

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
export function followLog(req: IncomingMessage, res: ServerResponse, keepAliveMs: number, log: FollowedLog, what: string): void {
  const after = lastEventId(req, log.lastId, what);
  const sse = new SseStream(res, { keepAliveMs });
  sse.open();
  sse.comment();
  const replay = log.since(after);
  // Unnumbered: it is about this resume, not an event of the stream.
  if (replay.missed) sse.write(`data: ${JSON.stringify({ type: 'error', message: replay.missed })}\n\n`);
  for (const frame of replay.frames) sse.write(frame.framed);
  const stopListening = log.listen({ push: (frame) => void sse.write(frame.framed), close: () => sse.finish('') });
  res.once('close', stopListening);
}
