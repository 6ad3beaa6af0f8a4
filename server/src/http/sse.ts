import type { ServerResponse } from 'node:http';
import type { ChatEvent, TerminalEvent } from '../chat/events';
import type { SpecEventWriter } from '../chat/specReply';
import { requestState } from './requestState';
import { BatchedStream, SSE } from './stream';

export { KEEP_ALIVE_MS } from './stream';

/** The SPEC events this writer frames (the vocabulary itself lives in chat/events.ts). */
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
 * SPEC reply's writer itself). It names itself on its request's state, so a failure after the
 * headers went out ends it with its one terminal event.
 */
export class SseStream extends BatchedStream implements SpecEventWriter {
  constructor(res: ServerResponse, options: SseOptions = {}) {
    super(res, SSE, options.keepAliveMs);
    requestState(res.req).stream = this;
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

  error(message: string): void {
    this.send({ type: 'error', message });
  }
}
