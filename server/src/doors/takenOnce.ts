/**
 * Signed statements the relay takes once (a registration's proof, a phone's signed action):
 * each carries when it was signed, is taken only within PROOF_WINDOW_MS of the relay's clock,
 * and is remembered until that time leaves the window, so one captured and sent again is
 * refused while it is fresh and as stale after.
 */
import { PROOF_WINDOW_MS } from '../protocol';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

/** An `issuedAt` as a phone writes it (ISO 8601 UTC, `Date.toISOString`), in ms; NaN for anything else. */
export const issuedAtMs = (value: unknown): number => (typeof value === 'string' && ISO_UTC.test(value) ? Date.parse(value) : NaN);

/** True when `issuedAt` is within the window of `now`, either way (the phone's clock may run ahead). */
export const fresh = (issuedAt: number, now: number): boolean => Math.abs(now - issuedAt) <= PROOF_WINDOW_MS;

export class TakenOnce {
  private readonly taken = new Map<string, number>();

  /** False when `id` was taken already; records it otherwise, until its issuedAt leaves the window. */
  take(id: string, issuedAt: number, now: number): boolean {
    for (const [k, until] of this.taken) if (until < now) this.taken.delete(k);
    if (this.taken.has(id)) return false;
    this.taken.set(id, issuedAt + PROOF_WINDOW_MS);
    return true;
  }
}
