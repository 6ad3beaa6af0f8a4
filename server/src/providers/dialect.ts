/**
 * What a provider kind's module gives the call (call.ts): how to ask for a reply and how to read
 * one, and nothing of the asking or reading itself. A dialect never sees the call, the transport
 * or the consumer: the call sends what `request` describes, frames the body, hands each line or
 * event to the dialect's mapper, and delivers the parts the mapper wrote.
 */
import type { ChatMessage, FinishReason, Piece, ToolCall, ToolOptions, ToolSpec } from './types';
import type { HttpFailure, WordingContext } from './wording';

/** One thing a reply holds, in provider order: a piece of text or reasoning, a whole tool call, its finish (always last). */
export type Part = Piece | { kind: 'tool'; call: ToolCall } | { kind: 'finish'; reason: FinishReason };

/**
 * Reads one reply: each NDJSON line or SSE event (its `event:` field, if any, as `type`) becomes
 * the parts it holds, appended to `out` in order. Its only state is its own (tool calls under
 * assembly, a stop reason seen early). A broken or failing stream is thrown as a StreamFault
 * (wording.ts); the parts appended before the throw still count.
 */
export interface Mapper {
  map(data: string, type: string | undefined, out: Part[]): void;
}

/** Whether a kind cannot work without an API key, sends one when the user set one, or takes none. */
export type KeyNeed = 'required' | 'optional' | 'none';

/** One turn as a dialect builds its request for it. */
export interface TurnRequest {
  messages: ChatMessage[];
  /** The tools the request offers; undefined when it offers none (an empty list is none). */
  tools?: ToolOptions & { tools: ToolSpec[] };
  key: string | undefined;
  /** The model in use (`auto` resolved). */
  model: string | undefined;
}

/** Where a runner lists its models. */
export interface ModelListing {
  url: string;
  headers: Record<string, string>;
  /** Model names from the list document, in its order. */
  names(doc: unknown): string[];
}

/** What a failure happened in, for a dialect's own wording of it. */
export interface FailureContext {
  ctx: WordingContext;
  /** The model in use, once known. */
  model: string | undefined;
  /** The tools the request offered (never for a model list). */
  tools?: ToolOptions;
}

export interface Dialect {
  key: KeyNeed;
  /** How the reply's body is framed. */
  framing: 'ndjson' | 'sse';
  /** The model as messages name it, where the kind spells it its own way (default: the config's). */
  model?: string;
  /** The model list: where, with which headers, and how to read its names. */
  listing(key: string | undefined): ModelListing;
  /** For kinds that resolve `model: "auto"` to the first model listed: what to say when none is. */
  noModels?: string;
  /** The kind's own wording of an HTTP failure, tried before the shared wording. */
  explain?(failure: HttpFailure, at: FailureContext): string | undefined;
  /** The reply's request: where, the kind's own headers, the body. */
  request(turn: TurnRequest): { url: string; headers: Record<string, string>; body: unknown };
  /** A fresh mapper for one reply. */
  mapper(): Mapper;
}
