// What the relay knows of one request and reads from it: its id and state (the funnel's and the
// doors'), its log line, and its body, read within the relay's budget in CONTRACT's order (media
// type → size → JSON). One place for what every request carries, whatever door answers it; HTTP
// facts only, so a door hands in its budget and deadline through BodyContext, which its context
// satisfies (http imports nothing above the ground floor).
import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger';
import { HttpError } from '../errors';
import type { Dialect } from './route';
import type { BatchedStream } from './writers';

/** A connection's responses not yet finished, and what waits for them all (the funnel's pipelining count). */
export interface Unfinished {
  count: number;
  waiting: (() => void)[];
}

export interface RequestLogEntry {
  method: string;
  /** The path only: a query string could carry anything, so it is never logged. */
  path: string;
  status: number;
  durationMs: number;
  provider?: string;
  /** The device that made the request (issue 26); absent for the pairing token. Never a token. */
  device?: string;
}

/** What answers a response and stops when its client goes away (a door's chat): http knows only that it can be aborted. */
export interface Abortable {
  abort(): void;
}

/**
 * Per-request HTTP facts, the ones a door may read and note: its id, when it came, who it was
 * admitted as, and how its response ends. What a door keeps about its own work (its request
 * shape, its reply) stays in the door; http knows no chat, agent or store.
 */
export interface RequestState {
  id: string;
  startedAt: number;
  /** The provider that answered, noted by the door for the request log line. */
  provider?: string;
  /** The device whose token admitted the request; undefined for the pairing token. */
  device?: string;
  /**
   * What the response's close aborts (the client went away). The funnel's one shared `close`
   * listener calls it, so a door adds no listener of its own per response. A response with one
   * is ended through it when its device is removed (the chat service ends that device's chats,
   * each in its door's words), not cut.
   */
  abortOnClose?: Abortable;
  /** A device removing itself (the phone's Unpair): its own answer is not cut with its other requests. */
  removesItsDevice?: boolean;
}

/**
 * What the funnel keeps per request beside the state doors see: how it was admitted and how to
 * word a failure. It also names the objects that act when the response closes: each of their
 * `close` listeners is one function shared by every request that finds its object here, where
 * a closure per request cost a closure, its context and `once`'s wrapper for every held stream
 * (per-stream heap, bench/NOTES.md).
 */
export interface FunnelState extends RequestState {
  /** The route's own way of wording a failure; undefined: CONTRACT's (the funnel's default). */
  dialect: Dialect | undefined;
  authenticated: boolean;
  expectsContinue: boolean;
  /** The request's path as the funnel routed it, for its log line. */
  path: string;
  /** Its connection's count of unfinished responses, which this one is part of until it closes. */
  unfinished: Unfinished | undefined;
  /**
   * The writer of a streamed response, whose keep-alive stops when the response closes. One with
   * a terminal error event (SSE's) ends with it when the request fails after the headers went out.
   */
  writer: BatchedStream | undefined;
}

/**
 * The state lives on the request under a symbol nobody else knows, so it goes with the request.
 * A WeakMap did the same, but each entry is an ephemeron the garbage collector treats apart,
 * once per request (bench/NOTES.md, issue 28).
 */
const STATE = Symbol('deskrelay.requestState');
type Stated = IncomingMessage & { [STATE]?: FunnelState };

/** The state of a request the funnel admitted (a fresh one for a request it never saw, in a test's own server). */
export function requestState(req: IncomingMessage): FunnelState {
  return (req as Stated)[STATE] ?? freshState(req);
}

/** A new id per request, fixed before anything can fail, so every answer carries it. */
export function freshState(req: IncomingMessage, expectsContinue = false): FunnelState {
  // Every field from the start, so that every state has one shape (fields added later change it).
  const state: FunnelState = {
    id: newRequestId(),
    startedAt: Date.now(),
    dialect: undefined,
    authenticated: false,
    expectsContinue,
    provider: undefined,
    device: undefined,
    abortOnClose: undefined,
    removesItsDevice: false,
    path: '',
    unfinished: undefined,
    writer: undefined,
  };
  (req as Stated)[STATE] = state;
  return state;
}

/**
 * Random bytes for ids, drawn 4 KiB at a time: one randomBytes(16) per request cost the relay
 * an OpenSSL call and a getpid syscall on every accepted stream (bench/NOTES.md, issue 10).
 * The ids are the same: 16 bytes from the CSPRNG, never reused.
 */
const POOL = Buffer.alloc(4096);
let used = POOL.length;

/** 32 lowercase hex characters, new per request (CONTRACT §1). */
export function newRequestId(): string {
  if (used === POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const id = POOL.toString('hex', used, used + 16);
  used += 16;
  return id;
}

// Each request ends in one log line (the funnel writes it from the state above).

/** Unauthenticated request lines allowed per second before they are counted instead of written. */
export const UNAUTHENTICATED_LINES_PER_SECOND = 20;

/**
 * Writes request log lines. Anyone who can reach the port can make unauthenticated requests,
 * and one line each let a client fill the desktop's log (40,949 lines in 10 s); past a small
 * rate those lines become one summary a second. Authenticated requests are always logged.
 */
export class RequestLog {
  private windowStart = 0;
  private inWindow = 0;
  private suppressed = 0;
  private summaryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly write: ((entry: RequestLogEntry) => void) | undefined,
    private readonly logger: Logger,
    private readonly perSecond = UNAUTHENTICATED_LINES_PER_SECOND,
  ) {}

  line(entry: RequestLogEntry, authenticated: boolean): void {
    if (!this.write) return;
    if (authenticated) return this.write(entry);
    const now = Date.now();
    if (now - this.windowStart >= 1_000) {
      this.flushSummary();
      this.windowStart = now;
      this.inWindow = 0;
    }
    if (this.inWindow < this.perSecond) {
      this.inWindow++;
      return this.write(entry);
    }
    this.suppressed++;
    // The summary comes even if the flood stops, so the log says what happened.
    this.summaryTimer ??= setTimeout(() => this.flushSummary(), this.windowStart + 1_000 - now).unref();
  }

  private flushSummary(): void {
    if (this.summaryTimer) clearTimeout(this.summaryTimer);
    this.summaryTimer = undefined;
    if (this.suppressed === 0) return;
    this.logger.warn(`… ${this.suppressed} unauthenticated request log lines suppressed (more than ${this.perSecond} a second)`);
    this.suppressed = 0;
  }

  close(): void {
    this.flushSummary();
  }
}

// Its body, read within the budget.

/** What every request body being read at once may hold together (issue 21, finding 2). */
export const DEFAULT_BODY_BUDGET_BYTES = 64 * 1024 * 1024;

/**
 * One relay's count of request body bytes held while bodies arrive. A body is buffered whole
 * before the chat's concurrency check, so without a shared bound only the connection cap limited
 * them: 512 connections × 10 MiB. Bytes are counted as they arrive and given back when the body
 * is done with (read, refused or abandoned).
 */
export class BodyBudget {
  private held = 0;

  constructor(readonly limitBytes: number) {}

  /** Takes `bytes`; false (nothing taken) when that would pass the budget. */
  take(bytes: number): boolean {
    if (this.held + bytes > this.limitBytes) return false;
    this.held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }

  get heldBytes(): number {
    return this.held;
  }
}

/** 503 with Retry-After: other bodies hold the budget; bodies arrive within seconds, so a retry soon gets through. */
export const busy = () =>
  new HttpError(503, 'server.busy', 'The desktop is receiving too many requests at once. Try again in a moment.', { 'Retry-After': '2' }, true);

export const MAX_BODY_BYTES = 1024 * 1024;

export interface BodyOptions {
  maxBytes?: number;
  /**
   * A smaller limit that holds unless `mayGrow` says otherwise: once the body passes
   * `softMaxBytes`, `mayGrow` sees what arrived so far, and false answers 413 at once (the rest
   * is not read). Chat requests: 1 MiB unless the request can carry images (10 MiB).
   */
  softMaxBytes?: number;
  mayGrow?(prefix: Buffer): boolean;
  /** How long the whole body may take to arrive; a trickling client cannot hold a connection forever. */
  timeoutMs: number;
  /** Shared by every body being read: past it, 503 (the rest is not read). */
  budget?: BodyBudget;
}

/** 415 unless Content-Type is absent or application/json (parameters such as charset are fine). */
export function checkMediaType(req: IncomingMessage): void {
  const type = req.headers['content-type'];
  // What clients send nearly always, answered without splitting the value.
  if (type === undefined || type === 'application/json') return;
  const essence = type.split(';', 1)[0].trim().toLowerCase();
  if (essence !== 'application/json') {
    throw new HttpError(415, 'request.unsupported_media_type', 'Send the chat request as Content-Type: application/json.');
  }
}

/** 413; `close` false only when the whole body was read (nothing is left to refuse reading). */
export const tooLarge = (max: number, why = '', close = true) =>
  new HttpError(413, 'request.body_too_large', `The request body is larger than ${max / 1024 / 1024} MiB${why}.`, {}, close);

/** Reads the raw body, refusing at once (without reading the rest) when it is too large. */
export function readBody(req: IncomingMessage, { maxBytes = MAX_BODY_BYTES, softMaxBytes, mayGrow, timeoutMs, budget }: BodyOptions): Promise<Buffer> {
  const announced = Number(req.headers['content-length']);
  if (Number.isFinite(announced) && announced > maxBytes) return Promise.reject(tooLarge(maxBytes));
  let soft = softMaxBytes !== undefined && softMaxBytes < maxBytes ? softMaxBytes : undefined;

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (err?: HttpError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Once read, the body is the chat's, which the concurrency limit bounds.
      budget?.give(size);
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onAborted).off('close', onClose);
      if (err) {
        req.pause();
        reject(err);
      } else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      if (budget && !budget.take(chunk.length)) return finish(busy());
      size += chunk.length;
      if (size > maxBytes) return finish(tooLarge(maxBytes));
      chunks.push(chunk);
      if (soft !== undefined && size > soft) {
        const limit = soft;
        soft = undefined;
        if (!mayGrow?.(Buffer.concat(chunks, size))) finish(tooLarge(limit, ` (only requests carrying images may be up to ${maxBytes / 1024 / 1024} MiB)`));
      }
    };
    const onEnd = () => finish();
    const onError = () => finish(new HttpError(400, 'request.invalid_json', 'The request body could not be read.', {}, true));
    const onAborted = onError;
    // A connection gone before the body ended gives its share of the budget back at once.
    const onClose = () => {
      if (!req.complete) onError();
    };
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      // A body that came in with its headers has been parsed whole once the event loop has run the
      // callbacks of this read (setImmediate; the parser reports headers and body in separate
      // callbacks, with ticks in between): nothing can trickle, so it needs no timer. A timer per
      // request was a visible share of accepting a stream (bench/NOTES.md, issue 28). A body
      // someone else already read to its end never ends again here: that one keeps its 408.
      if (settled || (req.complete && !req.readableEnded)) return;
      timer = setTimeout(
        () => finish(new HttpError(408, 'request.timeout', `The request body did not arrive within ${timeoutMs / 1000} s.`, {}, true)),
        timeoutMs,
      );
    };
    if (!req.complete || req.readableEnded) setImmediate(arm);
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onAborted).on('close', onClose);
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** 400 request.invalid_json for an empty body, bytes that are not UTF-8, or text that is not JSON. */
export function parseJson(raw: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new HttpError(400, 'request.invalid_json', 'The request body is not valid UTF-8.');
  }
  if (text.trim() === '') throw new HttpError(400, 'request.invalid_json', 'The request body is empty; send a JSON chat request.');
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'request.invalid_json', 'The request body is not valid JSON.');
  }
}

// A JSON body, as every HTTP door reads it.

/** What reading a request body takes: the relay's body budget and deadline (a door's context satisfies it). */
export interface BodyContext {
  readonly bodies: BodyBudget;
  readonly options: { readonly bodyTimeoutMs: number };
}

/** A chat request carrying images may be this large (issue 13); every other request keeps MAX_BODY_BYTES. */
export const MAX_IMAGE_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Only a message whose content is an array can hold an image; a JSON string cannot hold this
 * byte sequence (its quotes are escaped), so a body without it in its first MiB is text only.
 */
const CONTENT_ARRAY = /"content"\s*:\s*\[/;

export interface BodyLimit {
  /**
   * The route takes chat requests that may carry images: up to MAX_IMAGE_BODY_BYTES when they do.
   * A RegExp is the route's own sign of images in the body's first MiB (Ollama's `"images":[`).
   */
  images?: boolean | RegExp;
}

/**
 * An HTTP door's request body, checked in CONTRACT's order after auth: media type → size →
 * JSON. `raw` is what resumable streams hash to tell a repeated request from a new one. With
 * `images`, the body may pass 1 MiB only while its first MiB shows content given as parts;
 * the door then calls `limitTextOnly` once it has parsed the messages.
 */
export async function readJsonBody(req: IncomingMessage, ctx: BodyContext, limit: BodyLimit = {}): Promise<{ json: unknown; raw: Buffer }> {
  checkMediaType(req);
  const marker = limit.images instanceof RegExp ? limit.images : CONTENT_ARRAY;
  const raw = await readBody(
    req,
    limit.images
      ? {
          timeoutMs: ctx.options.bodyTimeoutMs,
          budget: ctx.bodies,
          maxBytes: MAX_IMAGE_BODY_BYTES,
          softMaxBytes: MAX_BODY_BYTES,
          mayGrow: (prefix) => marker.test(prefix.toString('latin1')),
        }
      : { timeoutMs: ctx.options.bodyTimeoutMs, budget: ctx.bodies },
  );
  return { json: parseJson(raw), raw };
}

/** 400 `request.invalid_body`, in the door's own words of what the body should be. */
export const invalidBody = (message: string) => new HttpError(400, 'request.invalid_body', message);

/** A parsed body that must be a JSON object; `shape` shows the client what is expected. */
export function jsonObject(json: unknown, shape: string): Record<string, unknown> {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw invalidBody(`The body must be a JSON object: ${shape}.`);
  return json as Record<string, unknown>;
}
