/**
 * The HTTP exchange with a provider, on undici (chosen by measurement, see bench/NOTES.md
 * "Provider transport: node:http vs undici"): the request, its idle timer, the caller's abort,
 * connection pooling, and a push-style read of the body. No wording here: the errors it raises
 * are the transport's own, wrapped in TransportFailure; call.ts words them.
 *
 * The exchange is undici's dispatch handler itself rather than a `request()` whose body is a
 * Readable: that Readable, its state and the dozen listeners reading it were most of what each
 * live stream kept in the young heap, and scavenge pauses follow what survives them (the
 * per-token p99, bench/NOTES.md, issue 28).
 */
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

/** A provider's answer before its body is read (Exchange.pump reads it). */
export interface ProviderResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
}

/** Where a body's reads are flushed to (the adapter's PieceSink). */
export interface Flushable {
  flush(): void | Promise<void>;
}

type Controller = Dispatcher.DispatchController;

/** Where the exchange is: each undici callback and each call of ours is read against it. */
const enum Phase {
  /** Request sent (or queued), no status yet: send() is waiting. */
  Waiting,
  /** Status and headers in, body held back (paused) until pump() takes it. */
  Held,
  /** pump() is reading the body. */
  Reading,
  /** The reader is done (end marker or error) but the body is still open: its tail goes nowhere. */
  Draining,
  /** The body ended, failed or was torn down; nothing more comes. */
  Over,
}

/**
 * One request to a provider and the reading of its body: undici's dispatch handler. One object
 * per call, with no closure of its own on the way of a token: the caller's abort reaches it as a
 * listener object (handleEvent), its timers and its once-per-read flush get it as an argument.
 */
export class Exchange implements Dispatcher.DispatchHandler {
  private timer: NodeJS.Timeout | undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  /** The idle timer counts only while armed; a disarmed timer that fires does nothing. */
  private armed = false;
  private idleFired = false;
  /** Aborted by the caller or by the idle limit: the exchange is being torn down. */
  private stopped = false;
  private phase = Phase.Waiting;
  private controller: Controller | undefined;
  /** What undici said before anyone was listening for it (a failure before pump(), a body that ended while held). */
  private early: { error?: unknown; ended?: boolean } | undefined;
  // send()'s promise, while it waits for the status line.
  private answer: ((res: ProviderResponse) => void) | undefined;
  private refuse: ((e: unknown) => void) | undefined;
  // pump()'s reader and promise.
  private framer: Framer | undefined;
  private sink: Flushable | undefined;
  private done: (() => void) | undefined;
  private failed: ((e: unknown) => void) | undefined;
  /** The framer has what it wants (the provider's end marker): the rest of the body is not read. */
  private complete = false;
  /** Framed pieces wait for their flush (at the end of the socket read, or when the consumer is ready). */
  private flushQueued = false;
  /** The consumer asked to wait (sink.flush() returned a promise): the body is paused, the idle timer off. */
  private holding = false;

  constructor(
    private readonly idleTimeoutMs: number,
    private readonly signal: AbortSignal,
  ) {
    if (signal.aborted) this.stopped = true;
    else signal.addEventListener('abort', this, { once: true });
  }

  /** The caller's signal aborted (EventTarget calls a listener object's handleEvent). */
  handleEvent(): void {
    this.stop();
  }

  /** The idle limit ended the exchange. */
  get idle(): boolean {
    return this.idleFired;
  }

  /**
   * Sends the request; resolves with the status and headers, the body held back until pump().
   * Credentials in the URL (`user:password@`) become a Basic Authorization header, as node:http
   * made them.
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
    // One call may ask twice (the model list for `auto`, then the reply): a fresh request.
    if (this.phase !== Phase.Waiting) {
      if (this.phase !== Phase.Over) this.controller?.abort(new Error('the previous answer was not read to its end'));
      if (this.graceTimer) clearTimeout(this.graceTimer);
      this.phase = Phase.Waiting;
      this.controller = this.early = undefined;
    }
    return new Promise<ProviderResponse>((resolve, reject) => {
      this.answer = resolve;
      this.refuse = reject;
      try {
        // The pool's own dispatch(): undici's top-level request(url) parses the URL on every call.
        pool(u).dispatch({ origin: where.origin, path: where.path, method, headers, body }, this);
      } catch (e) {
        this.refused(e);
      }
    });
  }

  /**
   * Reads the body push-style: each read goes through `framer` in one synchronous pass, then
   * `sink.flush()` once; a promise from it pauses the body (and the idle timer) until it
   * settles, so a slow consumer paces the provider. Resolves when the framer has what it wants
   * or the body ended; rejects with a TransportFailure, or with what the framer or sink threw
   * (the caller words it), and then the connection is destroyed.
   */
  pump(framer: Framer, sink: Flushable): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.phase !== Phase.Held) return reject(new TransportFailure(new Error('the response body is not there to read'), 'body'));
      this.framer = framer;
      this.sink = sink;
      this.done = resolve;
      this.failed = reject;
      this.complete = this.holding = this.flushQueued = false;
      this.phase = Phase.Reading;
      this.arm();
      const early = this.early;
      this.early = undefined;
      if (early?.error !== undefined) return this.onResponseError(this.controller, early.error as Error);
      if (early?.ended) return this.onResponseEnd(this.controller);
      // Resuming may hand over the rest of a socket read at once, synchronously.
      this.controller?.resume();
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
    if (this.stopped) return;
    if (this.phase === Phase.Waiting) {
      // No answer yet: nobody will read it.
      this.stop();
      return;
    }
    if (this.phase === Phase.Over) {
      this.signal.removeEventListener('abort', this);
      return;
    }
    this.phase = Phase.Draining;
    this.framer = undefined;
    this.sink = undefined;
    this.graceTimer = setTimeout(cutTail, TAIL_GRACE_MS, this);
    this.controller?.resume();
  }

  /** Drops whatever is left of the body (an error body read up to its cap): the connection is not pooled. */
  discard(): void {
    if (this.phase === Phase.Over) return;
    this.phase = Phase.Over;
    this.controller?.abort(new Error('the rest of the body was not wanted'));
  }

  /** Tears the exchange down at once (caller's abort, idle limit, a cap): the connection is destroyed, never pooled. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.signal.removeEventListener('abort', this);
    if (this.graceTimer) clearTimeout(this.graceTimer);
    const phase = this.phase;
    this.phase = Phase.Over;
    this.controller?.abort(new Error('aborted'));
    if (phase === Phase.Waiting) this.refused(new Error('aborted'));
    else if (phase === Phase.Reading) this.finish(new TransportFailure(new Error('aborted'), 'body'));
  }

  // undici's side of the exchange (Dispatcher.DispatchHandler).

  onRequestStart(controller: Controller): void {
    this.controller = controller;
    if (this.stopped) controller.abort(new Error('aborted'));
  }

  onResponseStart(controller: Controller, status: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx answers are interim: the real one follows on the same request.
    if (controller !== this.controller || status < 200 || this.phase !== Phase.Waiting) return;
    this.phase = Phase.Held;
    // undici keeps the raw header buffers on the controller for the life of the request: a dozen
    // small Buffers per live stream that nothing of ours reads (the parsed headers are here).
    controller.rawHeaders = null;
    // Held until pump(): the body's first bytes are often in the very read that held the headers.
    controller.pause();
    const answer = this.answer;
    this.answer = this.refuse = undefined;
    answer?.({ status, headers });
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (controller !== this.controller) return;
    if (this.phase !== Phase.Reading) {
      // A tail after the reader finished is dropped; anything else was not asked for yet.
      if (this.phase === Phase.Held) controller.pause();
      return;
    }
    if (this.complete) return;
    // While the consumer holds the reader back, undici may still hand over the rest of the read
    // it was in: framed now, flushed when the consumer is ready, and not counted as activity.
    if (!this.holding) this.arm();
    try {
      this.complete = this.framer!.chunk(chunk);
    } catch (e) {
      return this.finish(e);
    }
    // undici hands over each HTTP chunk of a socket read in its own call, so one read of a fast
    // provider is many calls: the flush waits for the end of that read, so the client gets one
    // write per read, not one per chunk.
    if (!this.flushQueued) {
      this.flushQueued = true;
      if (!this.holding) process.nextTick(flushRead, this);
    }
  }

  onResponseEnd(controller: Controller | undefined): void {
    // A call's earlier request (see send) may still report its end: only the current one counts.
    if (controller !== this.controller) return;
    const phase = this.phase;
    if (phase === Phase.Held || (phase === Phase.Reading && this.holding)) {
      // Nobody to tell yet: pump() or the consumer's readiness takes it from here.
      this.early = { ended: true };
      return;
    }
    this.phase = Phase.Over;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    if (phase === Phase.Draining) {
      this.signal.removeEventListener('abort', this);
      return;
    }
    if (phase === Phase.Reading) this.bodyEnded();
  }

  onResponseError(controller: Controller | undefined, error: Error): void {
    if (controller !== this.controller) return;
    const phase = this.phase;
    if (phase === Phase.Held || (phase === Phase.Reading && this.holding)) {
      this.early = { error };
      return;
    }
    this.phase = Phase.Over;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    if (phase === Phase.Waiting) this.refused(new TransportFailure(error, 'connect'));
    else if (phase === Phase.Reading) this.finish(new TransportFailure(error, 'body'));
  }

  /** One socket read's pieces are framed: flush them to the sink once. */
  flushRead(): void {
    this.flushQueued = false;
    if (this.phase !== Phase.Reading || this.holding) return;
    let wait: void | Promise<void>;
    try {
      wait = this.sink!.flush();
    } catch (e) {
      return this.finish(e);
    }
    if (wait) {
      this.holding = true;
      this.controller?.pause();
      this.disarm();
      wait.then(
        () => this.consumerReady(),
        (e: unknown) => this.finish(e),
      );
    } else if (this.complete) this.finish();
  }

  /** The idle limit passed with the timer armed. */
  idled(): void {
    if (!this.armed) return;
    this.idleFired = true;
    this.stop();
  }

  /** The tail did not arrive within TAIL_GRACE_MS: drop the connection rather than pool it. */
  cutTail(): void {
    if (this.phase !== Phase.Draining) return;
    this.phase = Phase.Over;
    this.signal.removeEventListener('abort', this);
    this.controller?.abort(new Error('the rest of the body did not arrive in time'));
  }

  /** The consumer took what was flushed: flush what came meanwhile, then read on (or end). */
  private consumerReady(): void {
    if (this.phase !== Phase.Reading) return;
    this.holding = false;
    if (this.flushQueued) {
      this.flushRead();
      if (this.holding || this.phase !== Phase.Reading) return;
    } else if (this.complete) return this.finish();
    const early = this.early;
    this.early = undefined;
    if (early?.error !== undefined) return this.onResponseError(this.controller, early.error as Error);
    if (early?.ended) return this.onResponseEnd(this.controller);
    this.arm();
    this.controller?.resume();
  }

  /** The body ended while being read: the framer's last piece, one flush, and the reader's end. */
  private bodyEnded(): void {
    let wait: void | Promise<void>;
    try {
      // After the end marker the rest of the body is not the framer's any more.
      if (!this.complete) this.framer!.end();
      this.flushQueued = false;
      wait = this.sink!.flush();
    } catch (e) {
      return this.finish(e);
    }
    if (wait) wait.then(() => this.finish(), (e: unknown) => this.finish(e));
    else this.finish();
  }

  /** The reader's end: resolved, or rejected with the connection destroyed. */
  private finish(e?: unknown): void {
    const done = this.done;
    const failed = this.failed;
    if (!done || !failed) return;
    this.done = this.failed = undefined;
    this.disarm();
    // The reader is done; whatever of the body is still to come is close()'s (pooled) or stop()'s
    // (cut). A body that already ended or failed while the consumer held the reader back (its end
    // kept in `early`) has nothing to come: close() must not resume it or wait for a tail.
    if (this.phase === Phase.Reading) this.phase = this.early ? Phase.Over : Phase.Draining;
    this.early = undefined;
    if (e === undefined) return done();
    this.stop();
    failed(e);
  }

  private refused(e: unknown): void {
    const refuse = this.refuse;
    this.answer = this.refuse = undefined;
    refuse?.(e instanceof TransportFailure ? e : new TransportFailure(e, 'connect'));
  }

  private arm(): void {
    this.armed = true;
    if (this.timer) this.timer.refresh();
    else this.timer = setTimeout(idled, this.idleTimeoutMs, this);
  }

  private disarm(): void {
    this.armed = false;
  }
}

// Module-level callbacks, handed the exchange as an argument: no closure per exchange.
function flushRead(x: Exchange): void {
  x.flushRead();
}
function idled(x: Exchange): void {
  x.idled();
}
function cutTail(x: Exchange): void {
  x.cutTail();
}
