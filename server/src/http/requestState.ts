import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestState } from './context';
import { contractDialect } from './errors';
import type { Dialect } from './route';

/** What the funnel keeps per request beside the state doors see: how it was admitted and how to word a failure. */
export interface FunnelState extends RequestState {
  dialect: Dialect;
  authenticated: boolean;
  expectsContinue: boolean;
}

const requestStates = new WeakMap<IncomingMessage, FunnelState>();

/** The state of a request the funnel admitted (a fresh one for a request it never saw, in a test's own server). */
export function requestState(req: IncomingMessage): FunnelState {
  return requestStates.get(req) ?? freshState(req);
}

/** A new id per request, fixed before anything can fail, so every answer carries it. */
export function freshState(req: IncomingMessage, expectsContinue = false): FunnelState {
  const state: FunnelState = { id: newRequestId(), startedAt: Date.now(), dialect: contractDialect, authenticated: false, expectsContinue };
  requestStates.set(req, state);
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
