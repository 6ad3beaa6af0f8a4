/**
 * One call of a provider, as its adapter sees it: the exchange (transport.ts), its body framed
 * (framing.ts), and every failure turned into a ProviderError a person can act on (wording.ts),
 * with the API key and any credentials of the base URL redacted first. Below it, how an adapter
 * gets one (its key read, keyedCall) and streams a reply through it (streamReply).
 */
import { baseUrlOf, baseUrlSecrets, describeProvider, resolveModel, type ModelListing } from './config';
import { abortError, ProviderError, redact } from './errors';
import { BodyFramer, FrameTooLong, MAX_ERROR_BODY, MAX_JSON_BYTES, NdjsonFramer, SseFramer, type EventHandler, type LineHandler } from './framing';
import { Exchange, TransportFailure, type Flushable, type ProviderResponse, type RawBody, type Wording } from './transport';
import {
  describeHttpFailure,
  describeNetworkFailure,
  idleMessage,
  notJson,
  notObject,
  providerMessage,
  streamErrorMessage,
  tooLongMessage,
  truncatedMessage,
  clip,
  type HttpFailure,
  type WordingContext,
} from './wording';

import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, PieceSink, ProviderConfig, ToolOptions, ToolSpec } from './types';

export type { ProviderResponse } from './transport';

export interface CallOptions {
  /** `Ollama at http://127.0.0.1:11434`: every message starts with it. */
  label: string;
  idleTimeoutMs: number;
  /** The caller's signal: the phone went away, stop at once. */
  signal: AbortSignal;
  /** The API key in use, so that no echo of it reaches a message. */
  secret?: string;
  /** Credentials written into the base URL (user, password, query values): never in a message either. */
  hidden?: string[];
  /** How the user sets the key (KeySource.howToSet), for 401/403; absent when the kind needs none. */
  keyHint?: string;
  /** The model asked for, named when the provider answers 404. */
  model?: string;
  /** Provider-specific wording for an HTTP failure, tried before the shared wording; `call.model` is the model in use. */
  explain?: ExplainCall;
}

/** An adapter's wording of an HTTP failure, given the call (its model once `auto` resolved). */
export type ExplainCall = (failure: HttpFailure, call: ProviderCall) => string | undefined;

export class ProviderCall implements Wording {
  private readonly exchange: Exchange;
  /** The model in use, once known (`auto` resolves after the call starts). */
  model: string | undefined;

  constructor(private readonly opts: CallOptions) {
    this.model = opts.model === 'auto' ? undefined : opts.model;
    this.exchange = new Exchange(opts.idleTimeoutMs, opts.signal);
  }

  get label(): string {
    return this.opts.label;
  }

  /** Sends the request; resolves with a 2xx response whose body is still unread. */
  async send(url: string, init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: unknown; raw?: RawBody }): Promise<ProviderResponse> {
    if (this.opts.signal.aborted) throw abortError();
    let res: ProviderResponse;
    try {
      res = await this.exchange.send(url, init.method, init.headers, init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)));
    } catch (e) {
      throw this.word(e);
    }
    if (res.status < 200 || res.status >= 300) throw await this.httpFailure(res);
    return res;
  }

  /** GET a small JSON document (model lists), at most MAX_JSON_BYTES. */
  async getJson(url: string, headers: Record<string, string>): Promise<unknown> {
    await this.send(url, { method: 'GET', headers });
    const body = new BodyFramer(MAX_JSON_BYTES, 'fail');
    await this.read(body, NO_FLUSH);
    return this.parseJson(body.text);
  }

  /** POST a non-JSON body (a multipart form) and read the small JSON document answering it, at most MAX_JSON_BYTES. */
  async postForJson(url: string, headers: Record<string, string>, raw: RawBody): Promise<unknown> {
    await this.send(url, { method: 'POST', headers, raw });
    const body = new BodyFramer(MAX_JSON_BYTES, 'fail');
    await this.read(body, NO_FLUSH);
    return this.parseJson(body.text);
  }

  /** Reads the answer's NDJSON body into `handler`, flushing `sink` once per read; resolves at its end marker or the body's end. */
  lines(handler: LineHandler, sink: Flushable): Promise<void> {
    return this.read(new NdjsonFramer(handler), sink);
  }

  /** Reads the answer's SSE body into `handler`, flushing `sink` once per read; resolves at its end marker or the body's end. */
  events(handler: EventHandler, sink: Flushable): Promise<void> {
    return this.read(new SseFramer(handler), sink);
  }

  parseJson(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      throw this.fail(notJson(this.label, this.redact(text)));
    }
  }

  /** One JSON object from a stream line or event; anything else means the stream is corrupt. */
  parseObject<T extends object>(text: string): T {
    const value = this.parseJson(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw this.fail(notObject(this.label, this.redact(text)));
    return value as T;
  }

  /** An error the provider reported inside an otherwise good stream. */
  streamError(said: string): ProviderError {
    return this.fail(streamErrorMessage(this.label, this.redact(said)));
  }

  /** The body closed before the provider's end marker. */
  truncated(): ProviderError {
    return this.fail(truncatedMessage(this.label));
  }

  fail(message: string): ProviderError {
    return new ProviderError(this.redact(message));
  }

  /** Provider text with the key and the base URL's credentials taken out; do this before cutting it. */
  redact(text: string): string {
    return redact(text, this.opts.secret, ...(this.opts.hidden ?? []));
  }

  /** Ends the call (see Exchange.close). */
  close(): void {
    this.exchange.close();
  }

  /**
   * The body read through `framer`; a failure comes out worded by this call (it is the pump's
   * Wording). Neither `async` nor a `.catch` closure: nothing more per live stream.
   */
  private read(framer: BodyFramer | NdjsonFramer | SseFramer, sink: Flushable): Promise<void> {
    return this.exchange.pump(framer, sink, this);
  }

  /**
   * Words a failure: the caller's abort stays an abort, the idle limit and transport failures
   * become ProviderErrors; anything else (the adapter's own ProviderError, an error the sink
   * threw) passes unchanged.
   */
  word(e: unknown): unknown {
    if (this.opts.signal.aborted) return abortError();
    if (this.exchange.idle) return this.fail(idleMessage(this.label, this.opts.idleTimeoutMs));
    if (e instanceof FrameTooLong) return this.fail(tooLongMessage(this.label, e.what, e.limit));
    if (e instanceof TransportFailure) return this.fail(describeNetworkFailure(this.label, e.raw, e.phase));
    return e;
  }

  private async httpFailure(res: ProviderResponse): Promise<ProviderError> {
    const text = await this.readErrorBody();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const said = clip(this.redact(body === undefined ? text : (providerMessage(body) ?? text)));
    const failure: HttpFailure = { status: res.status, said, body };
    const custom = this.opts.explain?.(failure, this);
    if (custom) return this.fail(custom);
    const retryAfter = res.headers['retry-after'];
    const ctx = { label: this.label, keyed: Boolean(this.opts.secret), keyHint: this.opts.keyHint, model: this.model };
    return this.fail(describeHttpFailure(ctx, failure, retryAfter === undefined ? null : String(retryAfter)));
  }

  /** The error body, bounded in size and time: a failing provider should not hang us either. */
  private async readErrorBody(): Promise<string> {
    const body = new BodyFramer(MAX_ERROR_BODY, 'stop');
    try {
      await this.exchange.pump(body, NO_FLUSH);
    } catch {
      if (this.opts.signal.aborted) throw abortError();
    } finally {
      this.exchange.discard();
    }
    return body.text;
  }
}

const NO_FLUSH: Flushable = { flush: () => undefined };

/** The key for a provider, if one is set. A key store that fails is reported, never its error text. */
export async function readKey(config: ProviderConfig, deps: AdapterDeps, label: string): Promise<string | undefined> {
  try {
    return (await deps.keys.get(config)) || undefined;
  } catch {
    throw new ProviderError(`the API key for ${label} could not be read; ${deps.keys.howToSet(config)}`);
  }
}

/**
 * The key for a provider that cannot work without one. A missing key is the user's to fix, so
 * the message says how (the variable or command from KeySource.howToSet).
 */
export async function requireKey(config: ProviderConfig, deps: AdapterDeps, label: string): Promise<string> {
  const key = await readKey(config, deps, label);
  if (!key) throw new ProviderError(`${label} needs an API key and none is set; ${deps.keys.howToSet(config)}`);
  return key;
}

/**
 * The call of a provider: the key (if any) and the base URL's credentials are redacted from
 * every message the call produces, and a refused key is answered with how to set it.
 */
export function keyedCall(
  config: ProviderConfig,
  deps: AdapterDeps,
  label: string,
  signal: AbortSignal,
  key: string | undefined,
  opts: { model?: string; explain?: ExplainCall; keyHint?: boolean } = {},
): ProviderCall {
  return new ProviderCall({
    label,
    idleTimeoutMs: deps.idleTimeoutMs,
    signal,
    secret: key,
    hidden: baseUrlSecrets(config),
    keyHint: opts.keyHint === false ? undefined : deps.keys.howToSet(config),
    model: opts.model ?? config.model,
    explain: opts.explain,
  });
}

/** A reader knows, once the stream ends, how the reply finished (undefined: it was cut short). */
interface Finishing {
  finish: FinishReason | undefined;
}

/** One adapter's request: where, its own headers and body, and the reader of its framing. */
export type StreamRequest = { url: string; headers: Record<string, string>; body: unknown } & ({ sse: EventHandler & Finishing } | { ndjson: LineHandler & Finishing });

/** A request that is out, as its reading needs it: the reader, in its framing. */
type Opened = { ndjson: LineHandler & Finishing } | { sse: EventHandler & Finishing };

/**
 * The request of a reply sent: `auto` resolved, the model named to the sink, the body built and
 * POSTed for. A frame of its own, so that what only the request needed (the plan, the body, the
 * provider's form of the messages) is not held while the reply streams: a suspended async
 * function keeps every local alive (bench/NOTES.md, per-stream heap).
 */
async function openReply(call: ProviderCall, sink: PieceSink, config: ProviderConfig, reply: ReplyPlan): Promise<Opened> {
  if (reply.models) call.model = await resolveModel(call, config, reply.models);
  sink.model?.(call.model ?? reply.model ?? config.model ?? '');
  const r = reply.request(call);
  const ndjson = 'ndjson' in r;
  await call.send(r.url, { method: 'POST', headers: { ...r.headers, accept: ndjson ? 'application/x-ndjson' : 'text/event-stream' }, body: r.body });
  return ndjson ? { ndjson: r.ndjson } : { sse: r.sse };
}

/**
 * The adapters' one request-stream-parse path: the request opened (openReply) inside the call,
 * so the call is closed however it ends; the stream fed to the reader in its framing, and a
 * stream that ends before the reader saw the finish is truncated.
 */
async function streamReply(call: ProviderCall, sink: PieceSink, opening: Promise<Opened>): Promise<FinishReason> {
  try {
    const opened = await opening;
    const reader = 'ndjson' in opened ? opened.ndjson : opened.sse;
    if ('ndjson' in opened) await call.lines(opened.ndjson, sink);
    else await call.events(opened.sse, sink);
    if (reader.finish === undefined) throw call.truncated();
    return reader.finish;
  } finally {
    call.close();
  }
}

/** Whether a kind cannot work without an API key, sends one when the user set one, or takes none. */
export type KeyNeed = 'required' | 'optional' | 'none';
type KeyFor<N extends KeyNeed> = N extends 'required' ? string : N extends 'optional' ? string | undefined : undefined;

/** The turn an adapter describes its reply for, with its key read and where the provider is. */
export interface ReplyTurn<Key> {
  messages: ChatMessage[];
  sink: PieceSink;
  /** The tools the request offers; undefined when it offers none (an empty list is none). */
  tools?: ToolOptions & { tools: ToolSpec[] };
  key: Key;
  base: string;
  label: string;
  /** For the shared wording of a refused key (keyed, how to set it). */
  ctx: WordingContext;
}

/** An adapter's reply to one turn: the model it names, its own wording of failures, and its request. */
export interface ReplyPlan {
  /** The model as messages name it, where the adapter spells it its own way (default: the config's). */
  model?: string;
  /** Tried before the shared wording; `call.model` is the model in use once `auto` resolved. */
  explain?: ExplainCall;
  /** Where the runner lists its models, for kinds that resolve `model: "auto"` to the first one. */
  models?: ModelListing;
  /** Builds the request inside the call (see streamReply), once the model is known. */
  request: (call: ProviderCall) => StreamRequest;
}

/**
 * A streaming adapter: each turn reads the key as the kind needs it, opens a keyed call, resolves
 * `auto`, names the model to the sink and streams the reply the plan describes, so an adapter
 * states only what is its own.
 */
export function streamingAdapter<N extends KeyNeed>(config: ProviderConfig, deps: AdapterDeps, need: N, plan: (turn: ReplyTurn<KeyFor<N>>) => ReplyPlan): ChatAdapter {
  const base = baseUrlOf(config);
  const label = describeProvider(config);
  return {
    label,
    async run(messages, signal, sink, options) {
      const key = need === 'none' ? undefined : need === 'required' ? await requireKey(config, deps, label) : await readKey(config, deps, label);
      const keyHint = need === 'none' ? undefined : deps.keys.howToSet(config);
      const tools = options?.tools?.length ? (options as ToolOptions & { tools: ToolSpec[] }) : undefined;
      const reply = plan({ messages, sink, tools, key: key as KeyFor<N>, base, label, ctx: { label, keyed: Boolean(key), keyHint } });
      const call = keyedCall(config, deps, label, signal, key, { model: reply.model, keyHint: need !== 'none', explain: reply.explain });
      return streamReply(call, sink, openReply(call, sink, config, reply));
    },
  };
}
