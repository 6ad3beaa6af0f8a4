import type { IncomingMessage } from 'node:http';
import { HttpError } from '../../http/errors';
import { EVENT_ID_RE as EVENT_ID, HEADERS, IDEMPOTENCY_KEY_RE as KEY } from '../../protocol';

export interface ResumeHeaders {
  /** The client's own id for this message. */
  key: string;
  /** The last event id the client has; undefined means "from the start". */
  lastEventId: number | undefined;
}

const KEY_HEADER = HEADERS.idempotencyKey.toLowerCase();
const LAST_EVENT_ID_HEADER = HEADERS.lastEventId.toLowerCase();

const invalidHeader = (message: string) => new HttpError(400, 'request.invalid_header', message);

/**
 * The opt-in to resumable streams: undefined without `Idempotency-Key` (SPEC behaviour, and
 * `Last-Event-ID` is then ignored). Checked right after auth, before the body is read.
 * A repeated header arrives joined with ", " and so is malformed.
 */
export function resumeHeaders(req: IncomingMessage): ResumeHeaders | undefined {
  const key = req.headers[KEY_HEADER];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || !KEY.test(key)) {
    throw invalidHeader('The Idempotency-Key header must be 8 to 128 characters from A-Z, a-z, 0-9, "_" and "-".');
  }
  const last = req.headers[LAST_EVENT_ID_HEADER];
  if (last === undefined) return { key, lastEventId: undefined };
  if (typeof last !== 'string' || !EVENT_ID.test(last.trim())) {
    throw invalidHeader('The Last-Event-ID header must be the number of the last event received (the value of its "id:" line).');
  }
  return { key, lastEventId: Number(last.trim()) };
}

export const lastEventIdTooHigh = (given: number, last: number) =>
  invalidHeader(`The Last-Event-ID header says ${given}, but this reply has only sent events up to ${last}.`);
