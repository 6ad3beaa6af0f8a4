/**
 * What every adapter does alike with tool calls: assembling arguments a provider streams in
 * fragments, bounding them, parsing them into an object, finding the call a tool result answers,
 * and wording a model's refusal to use tools. Each provider's own wire form stays in its adapter.
 */
import { randomBytes } from 'node:crypto';
import type { Part } from './dialect';
import type { ChatMessage, ToolCall, ToolChoice } from './types';
import { StreamFault, type HttpFailure } from './wording';

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
