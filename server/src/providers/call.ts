/**
 * One call of a provider, and the one path a reply takes through it. The call sends the request
 * (transport.ts), frames the answer's body (framing.ts), hands each line or event to the kind's
 * mapper (dialect.ts) and delivers the parts it wrote to the consumer; every failure comes out
 * as a ProviderError a person can act on (wording.ts), with the API key and any credentials of
 * the base URL redacted first. Nothing below the call calls back into it: the transport pushes
 * the body's bytes, the framer its lines, the mapper returns its parts.
 */
import { baseUrlSecrets, describeProvider } from './config';
import type { Dialect, FailureContext, KeyNeed, Mapper, ModelListing, Part } from './dialect';
import { abortError, ProviderError, redact } from './errors';
import { BodyFramer, FrameTooLong, MAX_ERROR_BODY, MAX_JSON_BYTES, NdjsonFramer, SseFramer, type EventHandler, type Framer, type LineHandler } from './framing';
import { Exchange, TransportFailure, type Flushable, type ProviderResponse, type RawBody } from './transport';
import {
  describeHttpFailure,
  describeNetworkFailure,
  idleMessage,
  notJson,
  providerMessage,
  StreamFault,
  tooLongMessage,
  truncatedMessage,
  clip,
  type HttpFailure,
} from './wording';

import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, PieceSink, ProviderConfig, ProviderModule, ToolOptions, ToolSpec } from './types';

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

/** A kind's own wording of an HTTP failure, given the call (its model once `auto` resolved). */
export type ExplainCall = (failure: HttpFailure, call: ProviderCall) => string | undefined;

export class ProviderCall {
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
    return this.readJson();
  }

  /** POST a non-JSON body (a multipart form) and read the small JSON document answering it, at most MAX_JSON_BYTES. */
  async postForJson(url: string, headers: Record<string, string>, raw: RawBody): Promise<unknown> {
    await this.send(url, { method: 'POST', headers, raw });
    return this.readJson();
  }

  /**
   * Reads the answer's body through `framer`, flushing `sink` once per read; resolves at the
   * framer's end marker or the body's end. What it rejects with is still to be worded (`word`).
   */
  read(framer: Framer, sink: Flushable): Promise<void> {
    return this.exchange.pump(framer, sink);
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
   * Words a failure: the caller's abort stays an abort; the idle limit, transport failures and
   * what the provider sent that cannot be read become ProviderErrors; anything else (an error
   * the consumer threw, a ProviderError already worded) passes unchanged.
   */
  word(e: unknown): unknown {
    if (this.opts.signal.aborted) return abortError();
    if (this.exchange.idle) return this.fail(idleMessage(this.label, this.opts.idleTimeoutMs));
    if (e instanceof StreamFault) return this.fail(e.word(this.label, (text) => this.redact(text)));
    if (e instanceof FrameTooLong) return this.fail(tooLongMessage(this.label, e.what, e.limit));
    if (e instanceof TransportFailure) return this.fail(describeNetworkFailure(this.label, e.raw, e.phase));
    return e;
  }

  private async readJson(): Promise<unknown> {
    const body = new BodyFramer(MAX_JSON_BYTES, 'fail');
    try {
      await this.read(body, NO_FLUSH);
    } catch (e) {
      throw this.word(e);
    }
    try {
      return JSON.parse(body.text);
    } catch {
      throw this.fail(notJson(this.label, this.redact(body.text)));
    }
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

/** The key as the kind needs it: none read, read if set, or required. */
function keyFor(need: KeyNeed, config: ProviderConfig, deps: AdapterDeps, label: string): Promise<string | undefined> | undefined {
  return need === 'none' ? undefined : need === 'required' ? requireKey(config, deps, label) : readKey(config, deps, label);
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
  opts: { model?: string; explain?: ExplainCall; keyHint?: boolean; hidden?: string[] } = {},
): ProviderCall {
  return new ProviderCall({
    label,
    idleTimeoutMs: deps.idleTimeoutMs,
    signal,
    secret: key,
    hidden: opts.hidden ?? baseUrlSecrets(config),
    keyHint: opts.keyHint === false ? undefined : deps.keys.howToSet(config),
    model: opts.model ?? config.model,
    explain: opts.explain,
  });
}

// The model: `model: "auto"` resolved from the runner's list, cached briefly, so a chat does not
// pay a round trip per message, yet a newly pulled model is picked up soon.

const CACHE_MS = 30_000;
const cache = new Map<string, { model: string; at: number }>();

/** The model to ask for: the configured one, or for `model: "auto"` (or none) the first model the runner lists. */
async function resolveModel(call: ProviderCall, config: ProviderConfig, listing: ModelListing, noModels: string): Promise<string> {
  if (config.model !== undefined && config.model !== 'auto') return config.model;
  const hit = cache.get(listing.url);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.model;
  const doc = await call.getJson(listing.url, listing.headers);
  const model = listing.names(doc)[0];
  if (!model) throw call.fail(noModels);
  cache.set(listing.url, { model, at: Date.now() });
  return model;
}

/** Tests and a "refresh" action start from a clean slate. */
export function clearModelCache(): void {
  cache.clear();
}

/**
 * The part of a reply the call delivers: each line or event goes to the mapper, and the parts it
 * wrote go to the consumer in order. The framer's handler in both framings.
 */
class Reply implements LineHandler, EventHandler {
  /** How the reply finished, once its finish part came (undefined: not yet, or cut short). */
  finish: FinishReason | undefined;
  /** The parts of one line or event; emptied as they are delivered. */
  private readonly out: Part[] = [];

  constructor(
    private readonly mapper: Mapper,
    private readonly sink: PieceSink,
  ) {}

  line(text: string): boolean {
    return this.take(text, undefined);
  }

  event(type: string | undefined, data: string): boolean {
    return this.take(data, type);
  }

  private take(data: string, type: string | undefined): boolean {
    try {
      this.mapper.map(data, type, this.out);
    } catch (e) {
      // What the line held before the fault is the provider's reply too, delivered first.
      this.deliver();
      throw e;
    }
    return this.deliver();
  }

  /** True once the finish part was delivered (it is always the last). */
  private deliver(): boolean {
    const out = this.out;
    const sink = this.sink;
    try {
      for (let i = 0; i < out.length; i++) {
        const part = out[i]!;
        if (part.kind === 'tool') sink.toolCall?.(part.call);
        else if (part.kind === 'finish') this.finish = part.reason;
        else sink.piece(part.kind, part.text);
      }
    } finally {
      // Popped, not `length = 0`: setting the length to 0 drops the array's backing store, and
      // the next line's push allocates another (measured: ~300 ns a token more).
      while (out.length > 0) out.pop();
    }
    return this.finish !== undefined;
  }
}

/**
 * The request of a reply sent: `auto` resolved, the model named to the sink, the body built and
 * POSTed for. A frame of its own, so that what only the request needed (the body, the provider's
 * form of the messages) is not held while the reply streams: a suspended async function keeps
 * every local alive (bench/NOTES.md, per-stream heap).
 */
async function openReply(call: ProviderCall, sink: PieceSink, config: ProviderConfig, dialect: Dialect, turn: Turn): Promise<void> {
  if (dialect.noModels !== undefined) call.model = await resolveModel(call, config, dialect.listing(turn.key), dialect.noModels);
  sink.model?.(call.model ?? dialect.model ?? config.model ?? '');
  const r = dialect.request({ messages: turn.messages, tools: turn.tools, key: turn.key, model: call.model });
  const accept = dialect.framing === 'ndjson' ? 'application/x-ndjson' : 'text/event-stream';
  await call.send(r.url, { method: 'POST', headers: { ...r.headers, accept }, body: r.body });
}

/**
 * A reply's one path: the request opened (openReply) inside the call, so the call is closed
 * however it ends; the body framed as the kind frames it, each frame mapped and its parts
 * delivered; a body that ends before the finish part is truncated.
 */
async function streamReply(call: ProviderCall, sink: PieceSink, dialect: Dialect, opening: Promise<void>): Promise<FinishReason> {
  try {
    await opening;
    const reply = new Reply(dialect.mapper(), sink);
    try {
      await call.read(dialect.framing === 'ndjson' ? new NdjsonFramer(reply) : new SseFramer(reply), sink);
    } catch (e) {
      throw call.word(e);
    }
    if (reply.finish === undefined) throw call.fail(truncatedMessage(call.label));
    return reply.finish;
  } finally {
    call.close();
  }
}

interface Turn {
  messages: ChatMessage[];
  tools?: ToolOptions & { tools: ToolSpec[] };
  key: string | undefined;
}

/**
 * The chat adapter of a kind spoken over HTTP: each turn reads the key as the kind needs it,
 * opens a keyed call, resolves `auto`, names the model to the sink and streams the reply, the
 * dialect saying only what is its own.
 */
export function chatAdapter(config: ProviderConfig, deps: AdapterDeps, dialect: Dialect): ChatAdapter {
  const label = describeProvider(config);
  const hidden = baseUrlSecrets(config);
  const keyHint = dialect.key === 'none' ? undefined : deps.keys.howToSet(config);
  return {
    label,
    async run(messages, signal, sink, options) {
      const key = await keyFor(dialect.key, config, deps, label);
      const tools = options?.tools?.length ? (options as ToolOptions & { tools: ToolSpec[] }) : undefined;
      const explain = dialect.explain && ((f: HttpFailure, call: ProviderCall) => dialect.explain!(f, { ctx: { label, keyed: Boolean(key), keyHint }, model: call.model, tools }));
      const call = keyedCall(config, deps, label, signal, key, { model: dialect.model, keyHint: keyHint !== undefined, explain, hidden });
      return streamReply(call, sink, dialect, openReply(call, sink, config, dialect, { messages, tools, key }));
    },
  };
}

/** A kind's models, through the same call as a chat, so failures are worded alike; names deduplicated. */
async function listModels(config: ProviderConfig, deps: AdapterDeps, dialect: Dialect, signal: AbortSignal): Promise<string[]> {
  const label = describeProvider(config);
  const key = await keyFor(dialect.key, config, deps, label);
  const at: FailureContext = { ctx: { label, keyed: Boolean(key), keyHint: dialect.key === 'none' ? undefined : deps.keys.howToSet(config) }, model: undefined };
  const explain = dialect.explain && ((f: HttpFailure) => dialect.explain!(f, at));
  // `auto`: a 404 names no model, it means a wrong base URL.
  const call = keyedCall(config, deps, label, signal, key, { model: 'auto', keyHint: dialect.key !== 'none', explain });
  try {
    const listing = dialect.listing(key);
    return [...new Set(listing.names(await call.getJson(listing.url, listing.headers)))];
  } finally {
    call.close();
  }
}

/** A provider kind spoken over HTTP, as the relay registers it: its dialect, driven by the call. */
export function overHttp(dialectOf: (config: ProviderConfig) => Dialect): ProviderModule {
  return {
    adapter: (config, deps) => chatAdapter(config, deps, dialectOf(config)),
    listModels: (config, deps, signal) => listModels(config, deps, dialectOf(config), signal),
  };
}
