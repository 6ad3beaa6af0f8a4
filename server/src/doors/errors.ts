import { ChatError, type ChatErrorCode } from '../chat/errors';
import { HttpError } from '../http/errors';

/** The HTTP status of each chat refusal (CONTRACT §3); every door words it in its own dialect. */
const CHAT_STATUS: Record<ChatErrorCode, number> = {
  'chat.no_provider': 412,
  'chat.too_many_streams': 429,
  'request.invalid_body': 400,
  'request.body_too_large': 413,
};

/**
 * A failure as the refusal a door answers with: an HttpError as it is, a chat refusal as its
 * CONTRACT status (Retry-After when it says when to try again); undefined for anything else (a
 * bug: the funnel logs it and answers 500). The funnel renders the result in the route's dialect.
 */
export function refusalOf(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (err instanceof ChatError) {
    return new HttpError(CHAT_STATUS[err.code], err.code, err.message, err.retryAfterS === undefined ? {} : { 'Retry-After': String(err.retryAfterS) });
  }
  return undefined;
}
