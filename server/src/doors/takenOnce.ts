/**
 * Signed statements the relay takes once (a registration's proof, a phone's signed action):
 * each carries when it was signed, is taken only within PROOF_WINDOW_MS of the relay's clock,
 * and is remembered until that time leaves the window, so one captured and sent again is
 * refused while it is fresh and as stale after.
 */
import { HttpError } from '../http/errors';
import { PROOF_WINDOW_MS } from '../protocol';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

/** An `issuedAt` as a phone writes it (ISO 8601 UTC, `Date.toISOString`), in ms; NaN for anything else. */
export const issuedAtMs = (value: unknown): number => (typeof value === 'string' && ISO_UTC.test(value) ? Date.parse(value) : NaN);

/** True when `issuedAt` is within the window of `now`, either way (the phone's clock may run ahead). */
export const fresh = (issuedAt: number, now: number): boolean => Math.abs(now - issuedAt) <= PROOF_WINDOW_MS;

/** Statements kept at most (each for 5 minutes): far past what phones sign, and a bound on what a token's holder can make the relay remember. */
export const MAX_TAKEN = 10_000;

export type Taking = 'taken' | 'used' | 'full';

export class TakenOnce {
  private readonly taken = new Map<string, number>();

  constructor(private readonly max = MAX_TAKEN) {}

  /** Records `id` until its issuedAt leaves the window: `used` when it was taken already, `full` when MAX_TAKEN are kept (nothing recorded). */
  take(id: string, issuedAt: number, now: number): Taking {
    for (const [k, until] of this.taken) if (until < now) this.taken.delete(k);
    if (this.taken.has(id)) return 'used';
    if (this.taken.size >= this.max) return 'full';
    this.taken.set(id, issuedAt + PROOF_WINDOW_MS);
    return 'taken';
  }
}

/** The answer when the taken set is full: nothing was done; a minute later the oldest have left the window. */
export const tooManySigned = (nothing: string) =>
  new HttpError(503, 'server.busy', `The desktop took too many signed requests in the last 5 minutes; ${nothing}. Try again in a minute.`, { 'Retry-After': '60' });
