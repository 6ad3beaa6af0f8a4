/**
 * A failed reply in plain words: what happened and what to do, with the relay's own line kept
 * for "Details". The relay words a provider's failure as `<Name> at <url> is not reachable
 * (ECONNREFUSED)` (server/src/providers/wording.ts): a phone user needs "Start Ollama".
 */
import { AUTH_MESSAGE } from './api';
import { isRemovalMessage, PHONE_FORGOTTEN_MESSAGE, PHONE_REMOVED_CODE, PHONE_REMOVED_MESSAGE } from './devices';

export interface Failure {
  /** What the user reads. */
  plain: string;
  /** The line as the relay (or the browser) said it, shown under "Details" when it adds something. */
  raw: string;
  /** Whether sending the same message again can help (not after a refused token or a too-large body). */
  retry: boolean;
  /** The code it was judged by ('network': the phone could not reach the relay at all). */
  code: FailureCode;
}

/** Where a failure came from: the relay's error code, or the page's own kinds. */
export type FailureCode = string | 'network' | 'dropped' | 'read';

/** "Ollama at http://127.0.0.1:11434 is not reachable (…)" → "Ollama". */
function providerName(raw: string): string {
  const m = /^(.+?)(?: at \S+)? (?:is not reachable|is rate-limiting|is unavailable|dropped the connection|sent nothing|failed with)/.exec(raw);
  return m?.[1] ?? 'The model';
}

export function describeFailure(raw: string, code: FailureCode = ''): Failure {
  const f = (plain: string, retry = true): Failure => ({ plain, raw, retry, code });
  // The desk removed this phone (a 401 with its device token, or its stream ended for it).
  if (code === PHONE_REMOVED_CODE || isRemovalMessage(raw)) return { plain: PHONE_REMOVED_MESSAGE, raw, retry: false, code: PHONE_REMOVED_CODE };
  // A device token the desk forgot (rotation) is worded apart from a stale pairing link.
  if (code.startsWith('auth.')) return f(raw === PHONE_FORGOTTEN_MESSAGE ? raw : AUTH_MESSAGE, false);
  if (code === 'request.body_too_large') return f('This message is too large to send. Remove a photo or two, then send it again.', false);
  if (code === 'network') return f("Your phone can't reach your computer: DeskRelay on it may be restarting, or it (or its tunnel) is off, or the phone is offline. This phone stays paired: tap Retry once it is back.");
  if (code === 'server.stopping') return f('DeskRelay on your computer stopped. Start it again, then tap Retry.');
  if (code === 'chat.too_many_streams') return f('Your computer is already writing other replies. Wait for one to finish, then tap Retry.');
  if (/relay is stopping/.test(raw)) return f('DeskRelay on your computer stopped. Start it again, then tap Retry.');
  if (code === 'dropped') return f('The connection to your computer was lost before the reply finished. Tap Retry.');
  if (/is not reachable/.test(raw)) return f(`Your computer can't reach ${providerName(raw)}. Start it, then tap Retry.`);
  if (/is rate-limiting|\b429\b/.test(raw)) return f(`${providerName(raw)} is busy right now. Wait a moment, then tap Retry.`);
  if (/is unavailable|failed with a server error/.test(raw)) return f(`${providerName(raw)} had a problem answering. Tap Retry.`);
  if (/dropped the connection|sent nothing/.test(raw)) return f(`${providerName(raw)} stopped in the middle of the reply. Tap Retry.`);
  // The relay's other refusals (no provider, a refused key…) are already written for people.
  return f(raw || 'The reply failed. Tap Retry.');
}
