/**
 * How a provider's streamed reply is cut up, alike for every adapter: its body into frames (NDJSON
 * lines, SSE events, one JSON document), and the tool calls those frames carry: assembled from
 * fragments, their arguments parsed into an object and then read by type for the agent's tools.
 * With them, what every adapter does alike around tool calls: ids for calls sent without one, the
 * call a tool result answers, a model's refusal to use tools. Each provider's own wire form stays
 * in its adapter. The framers and the assembler bound what they hold: a provider that never ends a
 * line, an event, a body or a call's arguments cannot grow our memory.
 */
import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceParser, type ParseError } from 'eventsource-parser';
import type { Part } from './dialect';
import type { ChatMessage, ToolCall, ToolChoice } from './types';
import { StreamFault, type HttpFailure } from './wording';

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

/** One call's arguments at most (UTF-16 code units of their JSON): a provider streaming more is stopped. */
export const MAX_TOOL_ARGUMENT_CHARS = 1024 * 1024;

/** The named tool of a `{name}` choice, else undefined. */
export function forcedName(choice: ToolChoice | undefined): string | undefined {
  return typeof choice === 'object' ? choice.name : undefined;
}

/**
 * Arguments as the model wrote them, parsed: '' (a call without arguments, as Anthropic streams
 * one) is `{}`; anything but a JSON object is the provider's fault and ends the reply.
 */
export function parseArguments(name: string, text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw StreamFault.quoting(`sent a call of tool "${name}" whose arguments are not valid JSON: `, text);
  }
  return argumentsObject(name, value);
}

/** Arguments a provider sent as a JSON value: an object is used as is; anything else ends the reply. */
export function argumentsObject(name: string, value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw StreamFault.quoting(`sent a call of tool "${name}" whose arguments are not a JSON object: `, JSON.stringify(value));
  }
  return value as Record<string, unknown>;
}

/**
 * A bad argument: told to the model as the tool's result, like a WorkspaceError. Unlike arguments
 * that are no JSON object (the provider's fault, which ends the reply), it is the model's mistake
 * to mend.
 */
export class ArgumentError extends Error {}

/** Reads a string argument; `required` refuses a missing or empty one with a message for the model. */
export function stringArg(input: Record<string, unknown>, name: string, required: true): string;
export function stringArg(input: Record<string, unknown>, name: string, required?: false): string | undefined;
export function stringArg(input: Record<string, unknown>, name: string, required = false): string | undefined {
  const value = input[name];
  if (value === undefined || value === null) {
    if (required) throw new ArgumentError(`"${name}" is required.`);
    return undefined;
  }
  if (typeof value !== 'string') throw new ArgumentError(`"${name}" must be a string.`);
  if (required && value === '') throw new ArgumentError(`"${name}" must not be empty.`);
  return value;
}

export function booleanArg(input: Record<string, unknown>, name: string): boolean {
  const value = input[name];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new ArgumentError(`"${name}" must be true or false.`);
  return value;
}

export function lineArg(input: Record<string, unknown>, name: string): number | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new ArgumentError(`"${name}" must be a line number (1 or more).`);
  return value;
}

/** Whole arguments (Ollama, Gemini) measured against the limit; only counted once per call. */
export function checkArgumentSize(name: string, args: Record<string, unknown>): void {
  if (JSON.stringify(args).length > MAX_TOOL_ARGUMENT_CHARS) throw tooLong(name);
}

const tooLong = (name: string) =>
  StreamFault.plain(`sent arguments over ${MAX_TOOL_ARGUMENT_CHARS / (1024 * 1024)} MiB for one call of tool "${name}"; the desktop stopped the reply there`);

/** A call that arrives whole (Ollama, Gemini): named, its arguments an object within the limit. */
export function wholeCall(id: string, name: string, args: Record<string, unknown>): Part {
  checkArgumentSize(name, args);
  return { kind: 'tool', call: { id, name, arguments: args } };
}

/** A tool call without a tool name: the model's call cannot be carried out. */
export const noName = () => StreamFault.plain('sent a tool call without a tool name');

/** A call under assembly: its fragments are joined once, when it is whole. */
interface PendingCall {
  id: string;
  name: string;
  parts: string[];
  size: number;
}

/**
 * Tool calls streamed in pieces (OpenAI's `delta.tool_calls` by `index`, Anthropic's content
 * blocks by `index`): the first piece names the call, later ones add argument fragments. A call
 * becomes a part once the provider says it is whole.
 */
export class ToolCallAssembler {
  private readonly pending = new Map<number, PendingCall>();
  /** Calls in the order they began, for `finishAll`. */
  private readonly order: number[] = [];

  get open(): boolean {
    return this.pending.size > 0;
  }

  has(index: number): boolean {
    return this.pending.has(index);
  }

  /** The id of the call open at `index`, if any. */
  idAt(index: number): string | undefined {
    return this.pending.get(index)?.id;
  }

  begin(index: number, id: string, name: string): void {
    this.pending.set(index, { id, name, parts: [], size: 0 });
    this.order.push(index);
  }

  /** Adds a fragment of a call's arguments; past MAX_TOOL_ARGUMENT_CHARS the reply is stopped. */
  add(index: number, fragment: string): void {
    const p = this.pending.get(index);
    if (p === undefined || fragment === '') return;
    p.size += fragment.length;
    if (p.size > MAX_TOOL_ARGUMENT_CHARS) throw tooLong(p.name);
    p.parts.push(fragment);
  }

  /** Names a call whose name came after its first piece (some servers split it). */
  rename(index: number, name: string): void {
    const p = this.pending.get(index);
    if (p !== undefined && p.name === '') p.name = name;
  }

  /** The call at `index` is whole: parsed, and appended to `out`. */
  finish(index: number, out: Part[]): void {
    const p = this.pending.get(index);
    if (p === undefined) return;
    this.pending.delete(index);
    if (p.name === '') throw noName();
    const call: ToolCall = { id: p.id, name: p.name, arguments: parseArguments(p.name, p.parts.join('')) };
    out.push({ kind: 'tool', call });
  }

  /** Every open call is whole (the provider's finish marker), in the order they began. */
  finishAll(out: Part[]): void {
    for (const index of this.order) this.finish(index, out);
    this.order.length = 0;
  }
}

/**
 * The tool a result answers, for providers that want its name (Gemini's functionResponse,
 * Ollama's tool_name): the message's own name, else the name of the call with its id among the
 * assistant turns before it.
 */
export function toolNameOf(messages: readonly ChatMessage[], at: number): string {
  const m = messages[at];
  if (m?.name) return m.name;
  for (let i = at - 1; i >= 0; i--) {
    const found = messages[i]?.toolCalls?.find((c) => c.id === m?.toolCallId);
    if (found) return found.name;
  }
  return '';
}

/**
 * A model or runner refusing tools (Ollama's 400 "… does not support tools", an OpenAI-compatible
 * server's 400 naming tools or functions, Gemini's "Function calling is not enabled"): one clear
 * message naming the model. Undefined for any other failure.
 */
export function toolRefusal(label: string, model: string | undefined, f: HttpFailure): string | undefined {
  if (f.status !== 400 || !/\btools?\b|function|jinja/i.test(f.said)) return undefined;
  const who = model ? `model "${model}" on ${label}` : `the model on ${label}`;
  return `${who} cannot use tools (HTTP 400: ${f.said}); send the request without tools, or pick a model that supports tool calling`;
}

/**
 * Ids for the tool calls of one reply whose provider sent none (Gemini, Ollama): made-up ones are
 * unique across a conversation (a random salt), so a tool result always finds its own call.
 */
export class CallIds {
  /** Calls seen so far in this reply, with or without an id of their own. */
  private count = 0;
  /** Drawn at the first made-up id: most replies call no tool, and a draw per stream costs a syscall on the accept path. */
  private salt: string | undefined;

  /** The provider's id when it sent a usable one, else a made-up one. */
  next(given: string | undefined): string {
    const n = this.count++;
    if (given !== undefined && given !== '') return given;
    this.salt ??= randomBytes(4).toString('hex');
    return `call_${this.salt}_${n}`;
  }
}
