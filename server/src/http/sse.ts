import type { ServerResponse } from 'node:http';
import type { ChatEvent } from '../chat/events';

export const KEEP_ALIVE_MS = 15_000;

/** The SPEC events this writer frames (the vocabulary itself lives in chat/events.ts). */
export type StreamEvent = ChatEvent;

export interface SseOptions {
  keepAliveMs?: number;
  /** Resumable streams number their events (`id: n`); SPEC streams do not. */
  withIds?: boolean;
}

const KEEP_ALIVE = ': \n\n';

const streamsByResponse = new WeakMap<ServerResponse, SseStream>();

/** The stream writing to `res`, if any: the app's error handler ends it with a terminal event. */
export function sseStreamOf(res: ServerResponse): SseStream | undefined {
  return streamsByResponse.get(res);
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
 * The one writer of a chat stream: it owns the headers, the framing, the keep-alive and the
 * rule that exactly one terminal event ends the response. Nothing else writes to `res`.
 */
export class SseStream {
  private terminal = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly keepAliveMs: number;
  /**
   * Events written in the current tick, sent as one write when the tick ends. A provider read
   * often holds hundreds of tokens: one res.write each meant three iovecs each in one writev,
   * and the kernel's per-iovec cost dominated the relay's CPU (bench/NOTES.md). No event waits
   * longer than it did before: Node's own cork also held them until the end of the tick.
   */
  private pending = '';
  private readonly flushPending = (): void => {
    if (this.pending === '') return;
    const data = this.pending;
    this.pending = '';
    if (this.ended) return;
    // The keep-alive interval restarts when bytes are written: once per batch, not per event.
    this.timer?.refresh();
    this.put(data);
  };

  constructor(
    private readonly res: ServerResponse,
    options: SseOptions = {},
  ) {
    this.keepAliveMs = options.keepAliveMs ?? KEEP_ALIVE_MS;
    res.once('close', () => this.stopKeepAlive());
    streamsByResponse.set(res, this);
  }

  /** Sends the 200 and its headers at once, before the provider has said anything. */
  open(extraHeaders: Record<string, string> = {}): void {
    const res = this.res;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    for (const [name, value] of Object.entries(extraHeaders)) res.setHeader(name, value);
    res.flushHeaders();
    // Small writes must leave at once: Nagle would hold a token back waiting for an ACK.
    res.socket?.setNoDelay(true);
    this.timer = setTimeout(() => this.keepAlive(), this.keepAliveMs);
  }

  /** True once the terminal event was written or the client went away. */
  get ended(): boolean {
    return this.terminal || this.res.destroyed;
  }

  /** Writes raw, already framed bytes; returns false when the client is not keeping up. */
  write(chunk: string): boolean {
    if (this.ended) return true;
    if (this.pending === '') process.nextTick(this.flushPending);
    this.pending += chunk;
    return this.pending.length < this.res.writableHighWaterMark && !this.needsDrain;
  }

  /**
   * Writes framed bytes and, when the client is not keeping up, returns the wait for it: a
   * generation awaits this before pulling more from the provider, so a slow reader paces the
   * provider instead of growing a buffer.
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

  done(content: string): void {
    this.send({ type: 'done', content });
  }

  error(message: string): void {
    this.send({ type: 'error', message });
  }

  /** Writes the terminal event (once; later calls do nothing) and ends the response. */
  finish(framed: string): void {
    if (this.ended) return;
    this.terminal = true;
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

  /** A comment line (`: `), which clients ignore: proof that bytes get through. */
  comment(): void {
    this.write(KEEP_ALIVE);
  }

  private keepAlive(): void {
    if (this.ended) return;
    this.flushPending();
    this.put(KEEP_ALIVE);
    this.timer?.refresh();
  }

  private stopKeepAlive(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
