import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpError } from './errors';
import { DEVICE_TOKEN_PREFIX } from '../protocol';

/** What a request may present: the pairing token in force, or the token of a registered device. */
export interface Credentials {
  pairing: string;
  /** Device tokens (issue 26); none in a relay built without them (tests). */
  devices?: { match(token: string): string | undefined };
}

/** Who an admitted request is: a device by id, or (device undefined) a holder of the pairing token. */
export interface Principal {
  device: string | undefined;
}

const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'Bearer realm="deskrelay"' };

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Compares digests rather than the strings so the comparison takes the same time whatever
 * the presented value's length or content: timingSafeEqual needs equal lengths.
 */
export function tokensMatch(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), expectedDigest(expected));
}

/** The token in force changes once per start: its digest is worked out once, not per request. */
let expectedCache: { token: string; digest: Buffer } | undefined;
function expectedDigest(token: string): Buffer {
  if (expectedCache?.token !== token) expectedCache = { token, digest: digest(token) };
  return expectedCache.digest;
}

/** Node keeps only the first of repeated Authorization headers; an ambiguous request is refused instead. */
function authorizationHeaders(req: IncomingMessage): string[] {
  const values: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i].toLowerCase() === 'authorization') values.push(req.rawHeaders[i + 1]);
  }
  return values;
}

export function missingToken(): HttpError {
  return new HttpError(401, 'auth.missing_token', 'Send the pairing token as "Authorization: Bearer <token>".', WWW_AUTHENTICATE);
}

export function invalidToken(presented?: string): HttpError {
  // The prefix is public (CONTRACT §1): it only picks the wording, never the timing.
  if (presented?.startsWith(DEVICE_TOKEN_PREFIX)) {
    return new HttpError(
      401,
      'auth.invalid_token',
      'This device token is not registered on the desktop: the device was removed, or the relay restarted without remembering devices. Pair again with the current pairing code.',
      WWW_AUTHENTICATE,
    );
  }
  return new HttpError(
    401,
    'auth.invalid_token',
    'The token does not match. The desktop makes a new token each time the relay starts: pair again with the current pairing JSON.',
    WWW_AUTHENTICATE,
  );
}

/** The presented bearer token, or undefined when the header is not a single `Bearer <token>`. */
export function bearerToken(header: string): string | undefined {
  const match = /^bearer[ ]+(\S+)[ ]*$/i.exec(header);
  return match?.[1];
}

const asCredentials = (expected: string | Credentials): Credentials => (typeof expected === 'string' ? { pairing: expected } : expected);

/**
 * Checks one presented token against the pairing token and every device token, all of them
 * every time (no early exit), so a refusal, a pairing-token match and a device match of any
 * device cost the same. Throws the CONTRACT's 401 when nothing matches.
 */
export function admitToken(presented: string | undefined, expected: string | Credentials): Principal {
  const { pairing, devices } = asCredentials(expected);
  const value = presented ?? '';
  const isPairing = tokensMatch(value, pairing);
  const device = devices?.match(value);
  if (presented === undefined || (!isPairing && device === undefined)) throw invalidToken(presented);
  return { device: isPairing ? undefined : device };
}

/** Throws the CONTRACT's 401 unless the request carries exactly one matching bearer token. */
export function authenticate(req: IncomingMessage, expected: string | Credentials): Principal {
  const headers = authorizationHeaders(req);
  if (headers.length === 0) throw missingToken();
  const presented = headers.length === 1 ? bearerToken(headers[0]) : undefined;
  // Compare even when the header is malformed, so a bad header costs the same time as a wrong token.
  return admitToken(presented, expected);
}
