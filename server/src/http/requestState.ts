import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger';
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
