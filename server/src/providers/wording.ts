/**
 * The shared wording of provider failures: what every provider kind says alike about HTTP
 * statuses, network errors, silence and broken streams. A provider's own dialect (Anthropic's
 * 529, Gemini's API_KEY_INVALID, Ollama's 404) lives in its adapter, as an `explain` hook.
 */

/** What an adapter may want to know to word an HTTP failure in its provider's terms. */
export interface HttpFailure {
  status: number;
  /** The provider's own error text, key redacted; empty if it sent none. */
  said: string;
  /** The parsed error body, if it was JSON. */
  body: unknown;
}

/** Provider-specific wording for an HTTP failure; undefined falls back to the shared wording. */
export type Explain = (failure: HttpFailure) => string | undefined;

export interface WordingContext {
  label: string;
  /** An API key is in use (decides "rejected the key" versus "needs a key"). */
  keyed: boolean;
  /** How the user sets the key (KeySource.howToSet); absent when the kind needs none. */
  keyHint?: string;
  /** The model asked for, named when the provider answers 404. */
  model?: string;
}

/** The longest piece of a provider's own text quoted in a message. */
const MAX_SAID = 300;
/** The longest piece of a broken stream quoted in a message. */
const MAX_SNIPPET = 120;

export function describeHttpFailure(ctx: WordingContext, f: HttpFailure, retryAfter: string | null): string {
  const label = ctx.label;
  const status = `HTTP ${f.status}${f.said ? `: ${f.said}` : ''}`;
  switch (true) {
    case f.status === 401 || f.status === 403:
      return keyRefused(ctx, status);
    case f.status === 404:
      return ctx.model
        ? `model "${ctx.model}" not found on ${label} (${status}); check the model name and the base URL`
        : `${label} does not have the requested path (${status}); check the base URL`;
    case f.status === 429:
      return `${label} is rate-limiting requests (${status}); try again ${retryAfter ? `in ${retryAfter} s` : 'later'}`;
    case f.status === 503:
      return `${label} is unavailable (${status}); try again shortly`;
    case f.status >= 500:
      return `${label} failed with a server error (${status})`;
    default:
      return `${label} refused the request (${status})`;
  }
}

/** A refused key (or a key that is needed and missing), and how to set it. */
export function keyRefused(ctx: WordingContext, status: string): string {
  if (ctx.keyHint === undefined) return `${ctx.label} refused access (${status})`;
  return ctx.keyed ? `${ctx.label} rejected the API key (${status}); ${ctx.keyHint}` : `${ctx.label} needs an API key (${status}); ${ctx.keyHint}`;
}

/** `HTTP 529: Overloaded`: the status part of a message, for adapters' own wording. */
export function statusText(f: HttpFailure): string {
  return `HTTP ${f.status}${f.said ? `: ${f.said}` : ''}`;
}

/** A network failure before or during the reply. */
export function describeNetworkFailure(label: string, e: unknown, phase: 'connect' | 'body'): string {
  const code = errorCode(e);
  if (phase === 'body') return `${label} dropped the connection in the middle of the reply (${code ?? describe(e)})`;
  if (code && DNS_CODES.has(code)) {
    return `${label} is not reachable (${code}): its host name could not be resolved; check the base URL and the network`;
  }
  if (code && isTlsCode(code)) {
    return `${label} is not reachable (${code}): the secure connection failed; check the server's certificate, or whether the base URL should use http://`;
  }
  return `${label} is not reachable (${code ?? describe(e)})`;
}

export function idleMessage(label: string, idleTimeoutMs: number): string {
  return `${label} sent nothing for ${seconds(idleTimeoutMs)} s`;
}

export function notJson(label: string, text: string): string {
  return `${label} sent a reply that is not valid JSON: ${snippet(text)}`;
}

export function notObject(label: string, text: string): string {
  return `${label} sent something other than a JSON object: ${snippet(text)}`;
}

export function streamErrorMessage(label: string, said: string): string {
  return `${label} reported an error: ${clip(said) || 'no details given'}`;
}

export function truncatedMessage(label: string): string {
  return `${label} ended the reply without finishing it (the stream closed before its end marker)`;
}

/** Past a framing cap (one line, one event, one JSON body). */
export function tooLongMessage(label: string, what: string, limitBytes: number): string {
  return `${label} sent ${what} longer than ${limitBytes / (1024 * 1024)} MiB`;
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

/** Provider text on one line, cut to MAX_SAID characters. Redact before calling this, never after. */
export function clip(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ');
  return t.length > MAX_SAID ? `${t.slice(0, MAX_SAID)}…` : t;
}

function snippet(text: string): string {
  return text.length > MAX_SNIPPET ? `${text.slice(0, MAX_SNIPPET)}…` : text;
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);

/** TLS failures; an https:// URL answered in plain HTTP shows as EPROTO or ERR_SSL_WRONG_VERSION_NUMBER. */
function isTlsCode(code: string): boolean {
  return code === 'EPROTO' || /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code);
}

/**
 * The error's code; also looks in `cause` and AggregateError members (connect errors across
 * addresses). undici calls a connection the provider closed mid-reply UND_ERR_SOCKET ("other
 * side closed"); messages keep calling it ECONNRESET, as they did before undici.
 */
export function errorCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let depth = 0; depth < 6 && typeof cur === 'object' && cur !== null; depth++) {
    const o = cur as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof o.code === 'string') return o.code === 'UND_ERR_SOCKET' ? 'ECONNRESET' : o.code;
    if (Array.isArray(o.errors) && o.errors.length > 0 && o.cause === undefined) cur = o.errors[0];
    else cur = o.cause;
  }
  return undefined;
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function seconds(ms: number): string {
  return String(Number((ms / 1000).toFixed(3)));
}

/**
 * A reply that cannot go on because of what the provider sent, thrown by a dialect's mapper
 * (dialect.ts), which knows neither the provider's label nor its secrets: the call words it
 * (`word`) with both, redacting what it quotes before cutting it.
 */
export class StreamFault extends Error {
  private constructor(
    private readonly form: 'said' | 'not-json' | 'not-object' | 'plain' | 'quoting' | 'overloaded',
    /** The provider's text (said, not-json, not-object, overloaded) or what comes after the label (plain, quoting). */
    private readonly text: string,
    private readonly quote = '',
  ) {
    super('the provider sent a stream that cannot be read');
  }

  /** An error the provider reported inside an otherwise good stream, in its own words. */
  static said(said: string): StreamFault {
    return new StreamFault('said', said);
  }

  /** A line or event that is not JSON, or not a JSON object. */
  static broken(text: string, parsed: boolean): StreamFault {
    return new StreamFault(parsed ? 'not-object' : 'not-json', text);
  }

  /** `<label> <what>`: e.g. `sent a tool call without a tool name`. */
  static plain(what: string): StreamFault {
    return new StreamFault('plain', what);
  }

  /** `<label> <what><quote, redacted and cut>`. */
  static quoting(what: string, quote: string): StreamFault {
    return new StreamFault('quoting', what, quote);
  }

  /** The provider said it is overloaded, in so many words. */
  static overloaded(said: string): StreamFault {
    return new StreamFault('overloaded', said);
  }

  /** The message, with the provider's label; `redact` takes the call's secrets out (the caller redacts the whole once more). */
  word(label: string, redact: (text: string) => string): string {
    switch (this.form) {
      case 'said':
        return streamErrorMessage(label, redact(this.text));
      case 'not-json':
        return notJson(label, redact(this.text));
      case 'not-object':
        return notObject(label, redact(this.text));
      case 'overloaded':
        return `${label} is overloaded: ${redact(this.text)}; try again shortly`;
      case 'quoting':
        return `${label} ${this.text}${snippet(redact(this.quote))}`;
      default:
        return `${label} ${this.text}`;
    }
  }
}

