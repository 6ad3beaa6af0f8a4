import type { IncomingMessage } from 'node:http';
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
