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

/**
 * One request to a provider: the fetch, its idle timer, the caller's abort, and the translation
 * of every failure into a ProviderError a person can act on. Every adapter goes through this.
 */
export class ProviderCall {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private idleFired = false;
  private readonly onCallerAbort = () => this.controller.abort();
  /** The model in use, once known (`auto` resolves after the call starts). */
  model: string | undefined;

  constructor(private readonly opts: CallOptions) {
    this.model = opts.model === 'auto' ? undefined : opts.model;
    if (opts.signal.aborted) this.controller.abort();
    else opts.signal.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  get label(): string {
    return this.opts.label;
  }

  /** Sends the request; resolves with a 2xx response whose body is still unread. */
  async send(url: string, init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: unknown }): Promise<Response> {
    this.throwIfAborted();
    this.arm();
    let res: Response;
    try {
      res = await fetch(url, {
        method: init.method,
        headers: init.body === undefined ? init.headers : { 'content-type': 'application/json', ...init.headers },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: this.controller.signal,
      });
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
    for await (const chunk of this.text(res)) text += chunk;
    return this.parseJson(text);
  }

  /** The body as text, decoded as it arrives; a character split across chunks comes out whole. */
  async *text(res: Response): AsyncGenerator<string> {
    if (!res.body) return;
    const reader = res.body.getReader();
    const decoder = new TextDecoder('utf-8');
    try {
      for (;;) {
        this.arm();
        let step: Awaited<ReturnType<typeof reader.read>>;
        try {
          step = await reader.read();
        } catch (e) {
          throw this.translate(e, 'body');
        }
        if (step.done) break;
        const text = decoder.decode(step.value, { stream: true });
        if (text === '') continue;
        // The provider is not silent while our consumer is busy with what it sent.
        this.disarm();
        yield text;
      }
      const rest = decoder.decode();
      if (rest !== '') yield rest;
    } finally {
      this.disarm();
      reader.cancel().catch(() => {});
    }
  }

  /** NDJSON: one line at a time, blank lines skipped, a last line without newline included. */
  async *lines(res: Response): AsyncGenerator<string> {
    let pending = '';
    for await (const chunk of this.text(res)) {
      pending += chunk;
      let nl: number;
      while ((nl = pending.indexOf('\n')) !== -1) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (line !== '') yield line;
      }
    }
    if (pending.trim() !== '') yield pending.trim();
  }

  /** Server-sent events. Comments are dropped here; their bytes already reset the idle timer. */
  async *events(res: Response): AsyncGenerator<SseMessage> {
    const queue: SseMessage[] = [];
    const parser = createParser({
      onEvent: (ev) => queue.push({ event: ev.event, data: ev.data }),
      onError: (err: ParseError) => {
        if (err.type === 'unknown-field' && err.field === 'error') queue.push({ event: 'error', data: err.value ?? '' });
      },
    });
    for await (const chunk of this.text(res)) {
      parser.feed(chunk);
      while (queue.length > 0) yield queue.shift()!;
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

  /** Ends the request: stops the timer and, if the body is still open, closes the socket. */
  close(): void {
    this.disarm();
    this.opts.signal.removeEventListener('abort', this.onCallerAbort);
    this.controller.abort();
  }

  private throwIfAborted(): void {
    if (this.opts.signal.aborted) throw abortError();
    if (this.idleFired) throw this.idleError();
  }

  private arm(): void {
    this.disarm();
    this.timer = setTimeout(() => {
      this.idleFired = true;
      this.controller.abort();
    }, this.opts.idleTimeoutMs);
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
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
    if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return this.idleError();
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

  private async httpFailure(res: Response): Promise<ProviderError> {
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
    return this.fail(describeHttpFailure(this.label, failure, this.opts, this.model, res.headers.get('retry-after')));
  }

  /** The error body, bounded in size and time: a failing provider should not hang us either. */
  private async readErrorBody(res: Response): Promise<string> {
    let text = '';
    try {
      for await (const chunk of this.text(res)) {
        text += chunk;
        if (text.length > MAX_ERROR_BODY) break;
      }
    } catch (e) {
      if (this.opts.signal.aborted) throw abortError();
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

function isTlsCode(code: string): boolean {
  return /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code);
}

/** Node's fetch hides the socket error in `cause`, sometimes inside an AggregateError. */
function errorCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let depth = 0; depth < 6 && typeof cur === 'object' && cur !== null; depth++) {
    const o = cur as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof o.code === 'string' && o.code !== 'UND_ERR_SOCKET') return o.code;
    if (Array.isArray(o.errors) && o.errors.length > 0 && o.cause === undefined) cur = o.errors[0];
    else if (o.code === 'UND_ERR_SOCKET' && o.cause === undefined) return 'connection closed by the server';
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
