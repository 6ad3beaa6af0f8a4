import { HttpError } from './errors';

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
