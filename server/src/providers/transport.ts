/**
 * The HTTP exchange with a provider, on undici's `request` API (chosen by measurement, see
 * bench/NOTES.md "Provider transport: node:http vs undici"): the request, its idle timer, the
 * caller's abort, connection pooling, and a push-style read of the body. No wording here: the
 * errors it raises are the transport's own, wrapped in TransportFailure; call.ts words them.
 */
import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { Agent, Dispatcher } from 'undici';
import type { Framer } from './framing';

type Undici = typeof import('undici');

/** How long a pooled provider connection may sit unused before it is closed. */
const POOL_IDLE_MS = 4_000;
/**
 * When a call ends with its body still open (the adapter saw its end marker but not yet the
 * chunked terminator behind it), how long the rest may take to arrive before the connection is
 * dropped rather than pooled. Short: a provider still streaming sees its connection closed
 * about this much later.
 */
const TAIL_GRACE_MS = 100;

// undici is loaded on the first provider request, not when the extension activates: it is most
// of the bundle's size. One Agent for every call; no cap on connections per origin (every open
// stream holds its own provider connection, and a cap would queue the 101st stream behind the
// first 100). Timeouts are ours (the idle timer below counts silence, and not while the
// consumer holds the reader back), so undici's own are off, the connect timeout included, as
// with node:http before.
let lib: Undici | undefined;
let loading: Promise<Undici> | undefined;
let agent: Agent | undefined;

async function undici(): Promise<Undici> {
  return lib ?? (loading ??= import('undici').then((m) => (lib = m)));
}

function pool(u: Undici): Agent {
  return (agent ??= new u.Agent({ keepAliveTimeout: POOL_IDLE_MS, connectTimeout: 0, headersTimeout: 0, bodyTimeout: 0 }));
}

/**
 * Where a provider URL sends a request: its origin and path (what undici's dispatcher takes,
 * so undici does not parse the URL again per request), and credentials as a Basic header.
 */
type Target = { origin: string; path: string; authorization?: string } | Error;
/** Provider URLs parsed so far: a relay asks the same few URLs over and over. */
const targets = new Map<string, Target>();
const MAX_TARGETS = 64;

/** Credentials in the URL (`user:password@`) become a Basic Authorization header, as node:http made them. */
function targetOf(url: string): Target {
  let known = targets.get(url);
  if (known) return known;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`unsupported protocol ${parsed.protocol}`);
    // What undici's `request(url)` sends for this URL: the origin, and the path with its query (no fragment).
    known = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (parsed.username || parsed.password) {
      known.authorization = `Basic ${Buffer.from(`${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`).toString('base64')}`;
    }
  } catch (e) {
    known = e instanceof Error ? e : new Error(String(e));
  }
  if (targets.size >= MAX_TARGETS) targets.clear();
  targets.set(url, known);
  return known;
}

/** A failure of the exchange itself (connect, TLS, a dropped connection, our own abort), still unworded. */
export class TransportFailure extends Error {
  constructor(
    readonly raw: unknown,
    readonly phase: 'connect' | 'body',
  ) {
    super('provider transport failure');
  }
}

/** A body that is not JSON (a multipart form), sent as these bytes with this Content-Type. */
export interface RawBody {
  bytes: Buffer;
  type: string;
}

/** A provider's response whose body is still unread. */
export interface ProviderResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Readable;
}

/** Where a body's reads are flushed to (the adapter's PieceSink). */
export interface Flushable {
  flush(): void | Promise<void>;
}

const ignore = () => {};

/**
 * The abort signal handed to undici for one request: undici takes an EventEmitter-like signal
 * (`once`/`removeListener`, `aborted`, `reason`), and this one is a field and a listener list.
 * An AbortController per request was a visible share of accepting a stream (createAbortSignal,
 * bench/NOTES.md, issue 28); nothing else ever listens to this signal.
 */
class StopSignal {
  aborted = false;
  readonly reason = undefined;
  private listeners: (() => void)[] = [];
  on(_event: 'abort', listener: () => void): this {
    this.listeners.push(listener);
    return this;
  }
  once(event: 'abort', listener: () => void): this {
    return this.on(event, listener);
  }
  removeListener(_event: 'abort', listener: () => void): this {
    this.listeners = this.listeners.filter((l) => l !== listener);
    return this;
  }
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const l of listeners) l();
  }
}

/** One request to a provider and the reading of its body. */
export class Exchange {
  private timer: NodeJS.Timeout | undefined;
  /** The idle timer counts only while armed; a disarmed timer that fires does nothing. */
  private armed = false;
  private idleFired = false;
  /** Aborted by the caller or by the idle limit: the exchange is being torn down. */
  private stopped = false;
  private controller: StopSignal | undefined;
  private body: Readable | undefined;
  private ended = false;
  private readonly onCallerAbort = () => this.stop();
  private readonly onIdle = () => {
    if (!this.armed) return;
    this.idleFired = true;
    this.stop();
  };

  constructor(
    private readonly idleTimeoutMs: number,
    private readonly signal: AbortSignal,
  ) {
    if (signal.aborted) this.stopped = true;
    else signal.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  /** The idle limit ended the exchange. */
  get idle(): boolean {
    return this.idleFired;
  }

  /**
   * Sends the request; resolves with the response, body unread. Credentials in the URL
   * (`user:password@`) become a Basic Authorization header, as node:http made them.
   */
  async send(url: string, method: 'GET' | 'POST', given: Record<string, string>, payload?: string | RawBody): Promise<ProviderResponse> {
    this.arm();
    const u = lib ?? (await undici());
    if (this.stopped) throw new TransportFailure(new Error('aborted'), 'connect');
    const headers: Record<string, string> = { accept: '*/*', 'user-agent': 'node' };
    const body = typeof payload === 'string' ? payload : payload?.bytes;
    if (payload !== undefined) {
      headers['content-type'] = typeof payload === 'string' ? 'application/json' : payload.type;
      headers['content-length'] = String(typeof payload === 'string' ? Buffer.byteLength(payload) : payload.bytes.length);
    }
    Object.assign(headers, given);
    const where = targetOf(url);
    if (where instanceof Error) throw new TransportFailure(where, 'connect');
    if (where.authorization) headers.authorization ??= where.authorization;
    this.controller = new StopSignal();
    let data: Dispatcher.ResponseData;
    try {
      // The pool's own request(): undici's top-level request(url) parses the URL on every call.
      data = await pool(u).request({ origin: where.origin, path: where.path, method, headers, body, signal: this.controller as unknown as EventEmitter });
    } catch (e) {
      throw new TransportFailure(e, 'connect');
    }
    // A body error after we stopped listening must not become an uncaught 'error' event.
    data.body.on('error', ignore);
    this.body = data.body;
    if (this.stopped) {
      data.body.destroy();
      throw new TransportFailure(new Error('aborted'), 'connect');
    }
    return { status: data.statusCode, headers: data.headers, body: data.body };
  }

  /**
   * Reads the body push-style: each read goes through `framer` in one synchronous pass, then
   * `sink.flush()` once; a promise from it pauses the body (and the idle timer) until it
   * settles, so a slow consumer paces the provider. Resolves when the framer has what it wants
   * or the body ended; rejects with a TransportFailure, or with what the framer or sink threw,
   * and then the connection is destroyed.
   */
  pump(res: ProviderResponse, framer: Framer, sink: Flushable): Promise<void> {
    const body = res.body;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const finish = (e?: unknown) => {
        if (settled) return;
        settled = true;
        this.disarm();
        body.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
        if (e === undefined) return resolve();
        this.stop();
        reject(e);
      };
      const done = () => finish();
      const resume = () => {
        if (settled) return;
        this.arm();
        body.resume();
      };
      // undici hands over each HTTP chunk as its own 'data' event, so one socket read of a fast
      // provider is many events: the flush waits for the end of that read (a microtask), so the
      // client gets one write per read, not one per chunk.
      let flushQueued = false;
      let complete = false;
      const flushRead = () => {
        flushQueued = false;
        if (settled) return;
        let wait: void | Promise<void>;
        try {
          wait = sink.flush();
        } catch (e) {
          return finish(e);
        }
        if (wait) {
          body.pause();
          this.disarm();
          wait.then(complete ? done : resume, finish);
        } else if (complete) finish();
      };
      const onData = (buf: Buffer) => {
        if (settled || complete) return;
        this.arm();
        try {
          complete = framer.chunk(buf);
        } catch (e) {
          return finish(e);
        }
        if (!flushQueued) {
          flushQueued = true;
          queueMicrotask(flushRead);
        }
      };
      const onEnd = () => {
        this.ended = true;
        let wait: void | Promise<void>;
        try {
          // After the end marker the rest of the body is not the framer's any more.
          if (!complete) framer.end();
          wait = sink.flush();
        } catch (e) {
          return finish(e);
        }
        if (wait) wait.then(done, finish);
        else finish();
      };
      const onError = (e: unknown) => finish(new TransportFailure(e, 'body'));
      const onClose = () => {
        if (!this.ended) finish(new TransportFailure(Object.assign(new Error('the connection closed before the body ended'), { code: 'ECONNRESET' }), 'body'));
      };
      body.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
      this.arm();
    });
  }

  /**
   * Ends the exchange: stops the timer and, if the body is still open, lets its last bytes in
   * for up to TAIL_GRACE_MS (after the end marker they are usually in flight) so that the
   * connection can go back to the pool; the caller's abort still cuts it at once.
   */
  close(): void {
    this.disarm();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const body = this.body;
    if (body && !this.ended && !body.destroyed && !this.stopped) {
      const grace = setTimeout(() => body.destroy(), TAIL_GRACE_MS);
      const done = () => {
        clearTimeout(grace);
        this.signal.removeEventListener('abort', this.onCallerAbort);
      };
      body.once('end', done).once('close', done);
      body.resume();
      return;
    }
    this.signal.removeEventListener('abort', this.onCallerAbort);
    if (!body && this.controller && !this.stopped) this.stop();
  }

  /** Tears the exchange down at once (caller's abort, idle limit, a cap): the connection is destroyed, never pooled. */
  stop(): void {
    if (this.stopped && !this.body) return;
    this.stopped = true;
    this.controller?.abort();
    if (this.body && !this.body.destroyed) this.body.destroy();
  }

  private arm(): void {
    this.armed = true;
    if (this.timer) this.timer.refresh();
    else this.timer = setTimeout(this.onIdle, this.idleTimeoutMs);
  }

  private disarm(): void {
    this.armed = false;
  }
}
