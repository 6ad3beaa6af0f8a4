import type { RequestLogEntry } from './context';
import type { Logger } from '../logger';

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
