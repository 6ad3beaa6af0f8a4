import { Agent as HttpAgent, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { createParser, type ParseError } from 'eventsource-parser';
import { abortError, ProviderError, redact } from './errors';

/** One SSE message, or an `error:` field (old llama.cpp servers) reported as event `error`. */
export interface SseMessage {
  event?: string;
  data: string;
}

/** What an adapter may want to know to word an HTTP failure in its provider's terms. */
export interface HttpFailure {
  status: number;
  /** The provider's own error text, key redacted; empty if it sent none. */
  said: string;
  /** The parsed error body, if it was JSON. */
  body: unknown;
}

export interface CallOptions {
  /** `Ollama at http://127.0.0.1:11434`: every message starts with it. */
  label: string;
  idleTimeoutMs: number;
  /** The caller's signal: the phone went away, stop at once. */
  signal: AbortSignal;
  /** The API key in use, so that no echo of it reaches a message. */
  secret?: string;
  /** How the user sets the key (KeySource.howToSet), for 401/403; absent when the kind needs none. */
  keyHint?: string;
  /** The model asked for, named when the provider answers 404. */
  model?: string;
  /** Provider-specific wording for an HTTP failure; undefined falls back to the shared wording. */
  explain?: (failure: HttpFailure) => string | undefined;
}

const MAX_ERROR_BODY = 64 * 1024;
const MAX_SAID = 300;
/** How long a pooled provider connection may sit unused before it is closed (undici's default was 4 s too). */
const POOL_IDLE_MS = 4_000;
/**
 * When a call ends with its body still open (the adapter saw its end marker but not yet the
 * chunked terminator behind it, or it stopped reading), how long the rest may take to arrive
 * before the connection is dropped rather than pooled. Short: a provider still streaming sees
 * its connection closed about this much later than with fetch.
 */
const TAIL_GRACE_MS = 100;

// One keep-alive pool per protocol, shared by every call. No cap on connections per host: every
// open stream holds its own provider connection, as it did with fetch (undici has no cap either),
// and a cap would queue the 101st stream behind the first 100. Idle pooled sockets close after
// POOL_IDLE_MS (sooner if the server's Keep-Alive header says so), and are unref'd meanwhile.
const httpAgent = new HttpAgent({ keepAlive: true, timeout: POOL_IDLE_MS });
const httpsAgent = new HttpsAgent({ keepAlive: true, timeout: POOL_IDLE_MS });

/**
 * A provider's 2xx response whose body is still unread: read it with `ProviderCall.lines()`,
 * `events()` or `text()`, once. The body is a Node stream read in paused mode, so a busy consumer
 * leaves it in the socket (the provider is paced, nothing piles up here).
 */
export class ProviderResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** @internal */ ended = false;
  /** @internal */ finished = false;
  /** @internal */ error: unknown = undefined;
  /** @internal */ wake: (() => void) | undefined = undefined;
  /** @internal */ readonly decoder = new StringDecoder('utf8');
  /** @internal */ started = false;
  /** @internal */ readonly notify = (): void => {
    const wake = this.wake;
    if (wake) {
      this.wake = undefined;
      wake();
    }
  };

  constructor(/** @internal */ readonly message: IncomingMessage) {
    this.status = message.statusCode ?? 0;
    this.headers = message.headers;
    message.on('readable', this.notify);
    message.once('end', () => {
      this.ended = true;
      this.notify();
    });
    message.on('error', (e: unknown) => this.fail(e));
    message.once('close', () => {
      if (!this.ended) this.fail(Object.assign(new Error('the connection closed before the body ended'), { code: 'ECONNRESET' }));
    });
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  /** @internal */
  fail(e: unknown): void {
    if (this.error === undefined && !this.ended) this.error = e;
    this.notify();
  }
}

/**
 * One request to a provider: the HTTP exchange, its idle timer, the caller's abort, and the
 * translation of every failure into a ProviderError a person can act on. Every adapter goes
 * through this.
 */
export class ProviderCall {
  private timer: NodeJS.Timeout | undefined;
  /** The idle timer counts only while armed; a disarmed timer that fires does nothing. */
  private armed = false;
  private idleFired = false;
  /** Aborted by the caller or by the idle limit: the exchange is being torn down. */
  private stopped = false;
  private req: ClientRequest | undefined;
  private res: ProviderResponse | undefined;
  /** Rejects a send() still waiting for headers. */
  private pending: ((e: unknown) => void) | undefined;
  private readonly onCallerAbort = () => this.stop();
  private readonly onIdle = () => {
    if (!this.armed) return;
    this.idleFired = true;
    this.stop();
  };
  /** The model in use, once known (`auto` resolves after the call starts). */
  model: string | undefined;

  constructor(private readonly opts: CallOptions) {
    this.model = opts.model === 'auto' ? undefined : opts.model;
    if (opts.signal.aborted) this.stopped = true;
    else opts.signal.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  get label(): string {
    return this.opts.label;
  }

  /** Sends the request; resolves with a 2xx response whose body is still unread. */
  async send(url: string, init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: unknown }): Promise<ProviderResponse> {
    this.throwIfAborted();
    this.arm();
    let res: ProviderResponse;
    try {
      res = await this.request(url, init.method, init.headers, init.body === undefined ? undefined : JSON.stringify(init.body), false);
    } catch (e) {
      throw this.translate(e, 'connect');
    }
    if (!res.ok) throw await this.httpFailure(res);
    this.arm();
    return res;
  }

  /** GET a small JSON document (model lists). */
  async getJson(url: string, headers: Record<string, string>): Promise<unknown> {
    const res = await this.send(url, { method: 'GET', headers });
    let text = '';
    for (let chunk = await this.read(res); chunk !== null; chunk = await this.read(res)) text += chunk;
    return this.parseJson(text);
  }

  /** The body as text, decoded as it arrives; a character split across chunks comes out whole. */
  async *text(res: ProviderResponse): AsyncGenerator<string> {
    try {
      for (let chunk = await this.read(res); chunk !== null; chunk = await this.read(res)) yield chunk;
    } finally {
      this.disarm();
    }
  }

  /** NDJSON: one line at a time, blank lines skipped, a last line without newline included. */
  async *lines(res: ProviderResponse): AsyncGenerator<string> {
    let pending = '';
    try {
      for (let chunk = await this.read(res); chunk !== null; chunk = await this.read(res)) {
        let nl = chunk.indexOf('\n');
        if (nl === -1) {
          pending += chunk;
          continue;
        }
        let start = 0;
        if (pending !== '') {
          const first = (pending + chunk.slice(0, nl)).trim();
          pending = '';
          start = nl + 1;
          nl = chunk.indexOf('\n', start);
          if (first !== '') yield first;
        }
        while (nl !== -1) {
          const line = chunk.slice(start, nl).trim();
          start = nl + 1;
          nl = chunk.indexOf('\n', start);
          if (line !== '') yield line;
        }
        if (start < chunk.length) pending = chunk.slice(start);
      }
    } finally {
      this.disarm();
    }
    if (pending.trim() !== '') yield pending.trim();
  }

  /** Server-sent events. Comments are dropped here; their bytes already reset the idle timer. */
  async *events(res: ProviderResponse): AsyncGenerator<SseMessage> {
    const queue: SseMessage[] = [];
    const parser = createParser({
      onEvent: (ev) => queue.push({ event: ev.event, data: ev.data }),
      onError: (err: ParseError) => {
        if (err.type === 'unknown-field' && err.field === 'error') queue.push({ event: 'error', data: err.value ?? '' });
      },
    });
    try {
      for (let chunk = await this.read(res); chunk !== null; chunk = await this.read(res)) {
        parser.feed(chunk);
        while (queue.length > 0) yield queue.shift()!;
      }
    } finally {
      this.disarm();
    }
    // A final event without its blank line still counts.
    parser.feed('\n\n');
    while (queue.length > 0) yield queue.shift()!;
  }

  parseJson(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      const snippet = text.length > 120 ? `${text.slice(0, 120)}…` : text;
      throw this.fail(`${this.label} sent a reply that is not valid JSON: ${snippet}`);
    }
  }

  /** One JSON object from a stream line or event; anything else means the stream is corrupt. */
  parseObject<T extends object>(text: string): T {
    const value = this.parseJson(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw this.fail(`${this.label} sent something other than a JSON object: ${text.length > 120 ? `${text.slice(0, 120)}…` : text}`);
    }
    return value as T;
  }

  /** An error the provider reported inside an otherwise good stream. */
  streamError(said: string): ProviderError {
    return this.fail(`${this.label} reported an error: ${clip(said) || 'no details given'}`);
  }

  /** The body closed before the provider's end marker. */
  truncated(): ProviderError {
    return this.fail(`${this.label} ended the reply without finishing it (the stream closed before its end marker)`);
  }

  fail(message: string): ProviderError {
    return new ProviderError(redact(message, this.opts.secret));
  }

  /**
   * Ends the request: stops the timer and, if the body is still open, closes the connection. A
   * body still open is drained for up to TAIL_GRACE_MS first (after the adapter's end marker,
   * its last bytes are usually in flight), so that its connection can go back to the pool; the
   * caller's abort still cuts it at once.
   */
  close(): void {
    this.armed = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const res = this.res;
    const m = res?.message;
    if (res && m && !res.ended && !m.destroyed && !this.stopped) {
      const done = () => {
        clearTimeout(grace);
        this.opts.signal.removeEventListener('abort', this.onCallerAbort);
      };
      const grace = setTimeout(() => m.destroy(), m.complete ? POOL_IDLE_MS : TAIL_GRACE_MS);
      m.once('end', done);
      m.once('close', done);
      m.removeListener('readable', res.notify);
      m.resume();
      return;
    }
    this.opts.signal.removeEventListener('abort', this.onCallerAbort);
    if (this.req && !this.res) this.stop();
  }

  /**
   * The next decoded text of the body, or null once it ended. The idle timer runs while this
   * waits and is disarmed while the consumer works on what it returned.
   */
  private async read(res: ProviderResponse): Promise<string | null> {
    if (res.finished) return null;
    const body = res.message;
    for (;;) {
      this.arm();
      if (this.stopped || res.error !== undefined) {
        this.disarm();
        throw this.translate(res.error, 'body');
      }
      const chunk = body.read() as Buffer | null;
      if (chunk !== null) {
        const text = this.decoded(res, res.decoder.write(chunk));
        if (text === '') continue;
        // The provider is not silent while our consumer is busy with what it sent.
        this.disarm();
        return text;
      }
      if (res.ended) {
        res.finished = true;
        this.disarm();
        const rest = this.decoded(res, res.decoder.end());
        return rest === '' ? null : rest;
      }
      await new Promise<void>((resolve) => (res.wake = resolve));
    }
  }

  /** As TextDecoder did: a byte-order mark opening the body is not part of the text. */
  private decoded(res: ProviderResponse, text: string): string {
    if (res.started || text === '') return text;
    res.started = true;
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }

  private request(url: string, method: string, given: Record<string, string>, body: string | undefined, retried: boolean): Promise<ProviderResponse> {
    return new Promise<ProviderResponse>((resolve, reject) => {
      let u: URL;
      try {
        u = new URL(url);
      } catch (e) {
        reject(e);
        return;
      }
      const secure = u.protocol === 'https:';
      if (!secure && u.protocol !== 'http:') {
        reject(new Error(`unsupported protocol ${u.protocol}`));
        return;
      }
      const headers: Record<string, string | number> = { accept: '*/*', 'user-agent': 'node' };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(body);
      }
      Object.assign(headers, given);
      const req = (secure ? httpsRequest : httpRequest)(u, { method, headers, agent: secure ? httpsAgent : httpAgent });
      this.req = req;
      this.res = undefined;
      let res: ProviderResponse | undefined;
      let settled = false;
      const settle = (e: unknown, ok?: ProviderResponse) => {
        if (settled) return;
        settled = true;
        this.pending = undefined;
        if (ok) resolve(ok);
        else reject(e);
      };
      this.pending = settle;
      req.on('response', (message: IncomingMessage) => {
        res = new ProviderResponse(message);
        this.res = res;
        settle(undefined, res);
      });
      req.on('error', (e: unknown) => {
        // After the headers, a socket error is the body's failure.
        if (res) return res.fail(e);
        // A pooled connection the server had just closed: one retry on a fresh one, as nothing was answered.
        const code = errorCode(e);
        if (!settled && !retried && !this.stopped && req.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE')) {
          settled = true;
          this.request(url, method, given, body, true).then(resolve, reject);
          return;
        }
        settle(e);
      });
      req.on('close', () => settle(Object.assign(new Error('the connection closed before the response'), { code: 'ECONNRESET' })));
      req.end(body);
    });
  }

  private throwIfAborted(): void {
    if (this.opts.signal.aborted) throw abortError();
    if (this.idleFired) throw this.idleError();
  }

  /** Tears the exchange down at once (caller's abort, idle limit): the connection is destroyed, never pooled. */
  private stop(): void {
    this.stopped = true;
    this.pending?.(abortError());
    const res = this.res;
    if (res) {
      res.message.destroy();
      res.notify();
    }
    this.req?.destroy();
  }

  private arm(): void {
    this.armed = true;
    if (this.timer) this.timer.refresh();
    else this.timer = setTimeout(this.onIdle, this.opts.idleTimeoutMs);
  }

  private disarm(): void {
    this.armed = false;
  }

  private idleError(): ProviderError {
    return this.fail(`${this.label} sent nothing for ${seconds(this.opts.idleTimeoutMs)} s`);
  }

  private translate(e: unknown, phase: 'connect' | 'body'): Error {
    if (this.opts.signal.aborted) return abortError();
    if (this.idleFired) return this.idleError();
    if (e instanceof ProviderError) return e;
    const code = errorCode(e);
    const label = this.label;
    if (phase === 'body') {
      return this.fail(`${label} dropped the connection in the middle of the reply (${code ?? describe(e)})`);
    }
    if (code && DNS_CODES.has(code)) {
      return this.fail(`${label} is not reachable (${code}): its host name could not be resolved; check the base URL and the network`);
    }
    if (code && isTlsCode(code)) {
      return this.fail(
        `${label} is not reachable (${code}): the secure connection failed; check the server's certificate, or whether the base URL should use http://`,
      );
    }
    if (code) return this.fail(`${label} is not reachable (${code})`);
    return this.fail(`${label} is not reachable (${describe(e)})`);
  }

  private async httpFailure(res: ProviderResponse): Promise<ProviderError> {
    const text = await this.readErrorBody(res);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const said = redact(clip(body === undefined ? text : providerMessage(body) ?? text), this.opts.secret);
    const failure: HttpFailure = { status: res.status, said, body };
    const custom = this.opts.explain?.(failure);
    if (custom) return this.fail(custom);
    const retryAfter = res.headers['retry-after'];
    return this.fail(describeHttpFailure(this.label, failure, this.opts, this.model, retryAfter === undefined ? null : String(retryAfter)));
  }

  /** The error body, bounded in size and time: a failing provider should not hang us either. */
  private async readErrorBody(res: ProviderResponse): Promise<string> {
    let text = '';
    try {
      for (let chunk = await this.read(res); chunk !== null; chunk = await this.read(res)) {
        text += chunk;
        if (text.length > MAX_ERROR_BODY) break;
      }
    } catch (e) {
      if (this.opts.signal.aborted) throw abortError();
    } finally {
      this.disarm();
      if (!res.ended) res.message.destroy();
    }
    return text;
  }
}

function describeHttpFailure(label: string, f: HttpFailure, opts: CallOptions, model: string | undefined, retryAfter: string | null): string {
  const status = `HTTP ${f.status}${f.said ? `: ${f.said}` : ''}`;
  switch (true) {
    case f.status === 401 || f.status === 403 || rejectsKey(f.body):
      if (opts.keyHint === undefined) return `${label} refused access (${status})`;
      return opts.secret
        ? `${label} rejected the API key (${status}); ${opts.keyHint}`
        : `${label} needs an API key (${status}); ${opts.keyHint}`;
    case f.status === 404:
      return model
        ? `model "${model}" not found on ${label} (${status}); check the model name and the base URL`
        : `${label} does not have the requested path (${status}); check the base URL`;
    case f.status === 429:
      return `${label} is rate-limiting requests (${status}); try again ${retryAfter ? `in ${retryAfter} s` : 'later'}`;
    case f.status === 529:
      return `${label} is overloaded (${status}); try again shortly`;
    case f.status === 503:
      return `${label} is unavailable (${status}); try again shortly`;
    case f.status >= 500:
      return `${label} failed with a server error (${status})`;
    default:
      return `${label} refused the request (${status})`;
  }
}

/**
 * The provider's own words from an error body, whatever its dialect: Ollama `{"error":"…"}`,
 * OpenAI/Anthropic/Gemini `{"error":{"message":"…"}}`, vLLM `{"message":"…"}`, Gemini's array form.
 */
export function providerMessage(body: unknown): string | undefined {
  const b = Array.isArray(body) ? body[0] : body;
  if (typeof b !== 'object' || b === null) return typeof b === 'string' ? b : undefined;
  const o = b as Record<string, unknown>;
  if (typeof o.error === 'string') return o.error;
  if (typeof o.error === 'object' && o.error !== null) {
    const m = (o.error as Record<string, unknown>).message;
    if (typeof m === 'string') return m;
  }
  if (typeof o.message === 'string') return o.message;
  if (typeof o.detail === 'string') return o.detail;
  return undefined;
}

/** The provider's own words in a mid-stream error payload, JSON or not. */
export function saidIn(data: string): string {
  try {
    return providerMessage(JSON.parse(data)) ?? data;
  } catch {
    return data;
  }
}

/** Gemini answers a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID, not 401. */
function rejectsKey(body: unknown): boolean {
  const b = Array.isArray(body) ? body[0] : body;
  const details = (b as { error?: { details?: unknown } } | undefined)?.error?.details;
  return Array.isArray(details) && details.some((d) => (d as { reason?: unknown } | null)?.reason === 'API_KEY_INVALID');
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);

/** TLS failures; node:https reports an https:// URL answered in plain HTTP as EPROTO ("wrong version number"). */
function isTlsCode(code: string): boolean {
  return code === 'EPROTO' || /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code);
}

/** The error's code; also looks in `cause` and AggregateError members (connect errors across addresses). */
function errorCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let depth = 0; depth < 6 && typeof cur === 'object' && cur !== null; depth++) {
    const o = cur as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof o.code === 'string') return o.code;
    if (Array.isArray(o.errors) && o.errors.length > 0 && o.cause === undefined) cur = o.errors[0];
    else cur = o.cause;
  }
  return undefined;
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function clip(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ');
  return t.length > MAX_SAID ? `${t.slice(0, MAX_SAID)}…` : t;
}

function seconds(ms: number): string {
  return String(Number((ms / 1000).toFixed(3)));
}
