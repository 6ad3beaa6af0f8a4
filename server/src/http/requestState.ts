import type { IncomingMessage } from 'node:http';
import type { RequestState } from './context';
import { contractDialect } from './errors';
import { newRequestId } from './requestId';
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
