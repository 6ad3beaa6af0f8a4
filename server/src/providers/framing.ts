/**
 * Body framing: turns the raw reads of a provider's body into what its adapter parses (NDJSON
 * lines, SSE events, one JSON document), in one synchronous pass per read. Each framer bounds
 * what it holds: a provider that never ends a line, an event or a body cannot grow our memory.
 */
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceParser, type ParseError } from 'eventsource-parser';
import { StreamFault } from './wording';

/** One NDJSON line or SSE event at most this long (security review, issue 18 #2). */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** A whole JSON document (a model list) at most this long. */
export const MAX_JSON_BYTES = 1024 * 1024;
/** An error body is read up to this much; the rest is not needed to word the failure. */
export const MAX_ERROR_BODY = 64 * 1024;

/** Thrown by a framer past its cap; the call words it with the provider's label. */
export class FrameTooLong extends Error {
  constructor(
    /** `a line`, `an event`, `a JSON body`. */
    readonly what: string,
    readonly limit: number,
  ) {
    super(`${what} longer than ${limit} bytes`);
  }
}

/** What the transport feeds a body to, read by read. */
export interface Framer {
  /** One read of the body. True once the reader has all it wants (the provider's end marker). */
  chunk(buf: Buffer): boolean;
  /** The body ended. */
  end(): void;
}

/** Receives NDJSON lines: trimmed, never blank. True at the provider's end marker. */
export interface LineHandler {
  line(text: string): boolean;
}

/** Receives SSE events (an `error:` field, sent by old llama.cpp servers, as event `error`). True at the end marker. */
export interface EventHandler {
  event(type: string | undefined, data: string): boolean;
}

/** Decodes UTF-8 across reads (a character split between two reads comes out whole). */
abstract class TextFramer implements Framer {
  private readonly decoder = new StringDecoder('utf8');
  private started = false;
  protected done = false;

  abstract chunk(buf: Buffer): boolean;
  abstract end(): void;

  protected decode(buf: Buffer): string {
    return this.opening(this.decoder.write(buf));
  }

  protected rest(): string {
    return this.opening(this.decoder.end());
  }

  /** As TextDecoder does: a byte-order mark opening the body is not part of the text. */
  private opening(text: string): string {
    if (this.started || text === '') return text;
    this.started = true;
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
}

/** NDJSON: one line at a time, blank lines skipped, a last line without newline included. */
export class NdjsonFramer extends TextFramer {
  private pending = '';
  /** Bytes since the last newline: counted on the raw bytes (0x0A never occurs inside a UTF-8 character). */
  private open = 0;

  constructor(
    private readonly handler: LineHandler,
    private readonly limit = MAX_FRAME_BYTES,
  ) {
    super();
  }

  chunk(buf: Buffer): boolean {
    if (this.done) return true;
    const last = buf.lastIndexOf(10);
    if (last === -1) {
      this.open += buf.length;
      if (this.open > this.limit) throw new FrameTooLong('a line', this.limit);
    } else {
      // A line wholly inside one read is no longer than the read, and reads are far below the cap.
      if (this.open + buf.indexOf(10) > this.limit) throw new FrameTooLong('a line', this.limit);
      this.open = buf.length - last - 1;
    }
    const chunk = this.decode(buf);
    let nl = chunk.indexOf('\n');
    if (nl === -1) {
      this.pending += chunk;
      return false;
    }
    let start = 0;
    if (this.pending !== '') {
      const first = (this.pending + chunk.slice(0, nl)).trim();
      this.pending = '';
      start = nl + 1;
      nl = chunk.indexOf('\n', start);
      if (first !== '' && this.handler.line(first)) return (this.done = true);
    }
    while (nl !== -1) {
      const line = chunk.slice(start, nl).trim();
      start = nl + 1;
      nl = chunk.indexOf('\n', start);
      if (line !== '' && this.handler.line(line)) return (this.done = true);
    }
    if (start < chunk.length) this.pending = chunk.slice(start);
    return false;
  }

  end(): void {
    if (this.done) return;
    const last = (this.pending + this.rest()).trim();
    this.pending = '';
    if (last !== '') this.done = this.handler.line(last);
  }
}

/**
 * Server-sent events, parsed by eventsource-parser. Comments are dropped (their bytes already
 * count as signs of life). The cap counts the bytes received since the read that completed the
 * last event: an event longer than the cap is caught within one read of it.
 */
export class SseFramer extends TextFramer {
  private readonly parser: EventSourceParser;
  private open = 0;
  private dispatched = false;

  constructor(
    private readonly handler: EventHandler,
    private readonly limit = MAX_FRAME_BYTES,
  ) {
    super();
    this.parser = createParser({
      onEvent: (ev) => this.dispatch(ev.event, ev.data),
      onError: (err: ParseError) => {
        if (err.type === 'unknown-field' && err.field === 'error') this.dispatch('error', err.value ?? '');
      },
    });
  }

  chunk(buf: Buffer): boolean {
    if (this.done) return true;
    this.open += buf.length;
    if (this.open > this.limit) throw new FrameTooLong('an event', this.limit);
    this.dispatched = false;
    this.parser.feed(this.decode(buf));
    if (this.dispatched) this.open = 0;
    return this.done;
  }

  end(): void {
    if (this.done) return;
    const rest = this.rest();
    if (rest !== '') this.parser.feed(rest);
    // A final event without its blank line still counts.
    this.parser.feed('\n\n');
  }

  private dispatch(type: string | undefined, data: string): void {
    this.dispatched = true;
    // Events after the end marker in the same read are not the reply's.
    if (!this.done && this.handler.event(type, data)) this.done = true;
  }
}

/** Gathers a whole body as text, up to `limit` bytes: past it, throws (`fail`) or stops reading (`stop`). */
export class BodyFramer extends TextFramer {
  text = '';
  private bytes = 0;

  constructor(
    private readonly limit: number,
    private readonly past: 'fail' | 'stop',
  ) {
    super();
  }

  chunk(buf: Buffer): boolean {
    this.bytes += buf.length;
    if (this.bytes > this.limit && this.past === 'fail') throw new FrameTooLong('a JSON body', this.limit);
    this.text += this.decode(buf);
    return this.bytes > this.limit;
  }

  end(): void {
    this.text += this.rest();
  }
}

/** One line or event of a stream as the JSON object it must be; anything else is a StreamFault. */
export function parseObject<T extends object>(text: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw StreamFault.broken(text, false);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw StreamFault.broken(text, true);
  return value as T;
}
