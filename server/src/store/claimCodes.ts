import { hash, randomInt, timingSafeEqual } from 'node:crypto';

/** No 0/O, 1/I/L: a code read off a screen and typed on a phone cannot be misread. */
export const CODE_ALPHABET = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';
export const CODE_LENGTH = 8;
/** A code is good this long after the desk made it. */
export const CODE_TTL_MS = 5 * 60_000;
/** Wrong claims a live code survives; the next one ends it. */
export const CODE_MAX_WRONG = 5;
/** Failed claims allowed per minute, from anywhere; past them every claim waits. */
export const CLAIMS_PER_MINUTE = 10;
const WINDOW_MS = 60_000;

export interface IssuedCode {
  code: string;
  expiresAt: number;
}

export type ClaimOutcome = { ok: true } | { ok: false; reason: 'invalid' } | { ok: false; reason: 'limited'; retryAfterS: number };

const digest = (code: string) => hash('sha256', code, 'buffer');

/** What a person types: case and the spaces or dashes a code may be shown with do not matter. */
export const normaliseCode = (typed: string) => typed.replace(/[\s-]/g, '').toUpperCase();

/**
 * The desk's one-time pairing code (issue 36): 8 characters of CODE_ALPHABET (31^8, about 40
 * bits), good for 5 minutes and one claim. The claim door is reachable without a token (that is
 * its point), so guessing is bounded: a code dies after 5 wrong claims, and more than 10 failed
 * claims a minute, from anywhere, makes every claim wait (`limited`) until the minute has
 * passed. A new code replaces the one before. Codes are compared as SHA-256 digests in
 * constant time. `now` is injectable so tests expire codes without sleeping.
 */
export class ClaimCodes {
  private current: { digest: Buffer; expiresAt: number; wrong: number } | undefined;
  /** When each failed claim of the last minute happened, oldest first. */
  private failures: number[] = [];

  constructor(private readonly now: () => number = Date.now) {}

  issue(): IssuedCode {
    let code = '';
    for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
    const expiresAt = this.now() + CODE_TTL_MS;
    this.current = { digest: digest(code), expiresAt, wrong: 0 };
    return { code, expiresAt };
  }

  /** Seconds until claims are tried again, while too many failed in the last minute; undefined otherwise. */
  pausedFor(): number | undefined {
    const now = this.now();
    this.failures = this.failures.filter((at) => now - at < WINDOW_MS);
    if (this.failures.length < CLAIMS_PER_MINUTE) return undefined;
    return Math.max(1, Math.ceil((this.failures[0]! + WINDOW_MS - now) / 1000));
  }

  /** Checks a typed code; a right one is used up at once (single use). */
  claim(typed: string): ClaimOutcome {
    return this.attempt(typed, true);
  }

  /**
   * Checks a typed code as `claim` does (a wrong one counts the same) but leaves a right one
   * live: the claim door checks the code before anything else of the request answers, and uses
   * it up only once the rest holds.
   */
  check(typed: string): ClaimOutcome {
    return this.attempt(typed, false);
  }

  private attempt(typed: string, use: boolean): ClaimOutcome {
    const paused = this.pausedFor();
    if (paused !== undefined) return { ok: false, reason: 'limited', retryAfterS: paused };
    const now = this.now();
    const live = this.current !== undefined && this.current.expiresAt > now ? this.current : undefined;
    // Compared even with no live code, so the time does not say whether one exists.
    const right = timingSafeEqual(digest(normaliseCode(typed)), live?.digest ?? digest('\u0000'));
    if (live && right) {
      if (use) this.current = undefined;
      return { ok: true };
    }
    this.failures.push(now);
    if (live && ++live.wrong >= CODE_MAX_WRONG) this.current = undefined;
    return { ok: false, reason: 'invalid' };
  }
}
