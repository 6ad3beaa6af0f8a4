import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { HttpError } from './errors';
import { DEVICE_TOKEN_PREFIX } from '../protocol';

// The funnel's two gates (http/funnel.ts): which Host names the relay answers, checked before
// the route, and which tokens it admits, checked after the route and before the door.

/**
 * Which Host values the relay answers (DNS rebinding defence). A page on an attacker's domain
 * that re-points its name at 127.0.0.1 reaches the relay with `Host: attacker.example`; the
 * browser then treats our answers as same-origin to the attacker. Refusing unknown names keeps
 * even the unauthenticated `/` and `/v1/health` unreadable that way.
 *
 * Allowed: loopback addresses, `localhost` and `*.localhost` (RFC 6761: always loopback), the
 * address the relay is bound to (any address of this machine for a wildcard bind), and the
 * public hostnames the host announced (the tunnel's). The port is not compared: rebinding is
 * about the name, and a tunnel or proxy may present another port.
 */
export class HostPolicy {
  private publicHosts = new Set<string>();
  /**
   * Answers for the Host values seen lately: clients send the same one or two on every request,
   * and working one out (a RegExp, address checks) was a visible share of accepting a stream.
   * Emptied when the announced names change, and when full (anyone may send any Host).
   */
  private readonly answers = new Map<string, boolean>();
  /** Bound to every address: whether an address is this machine's can change, so answers are not kept. */
  private readonly wildcard: boolean;

  constructor(private readonly bound: string) {
    const name = normalise(bound);
    this.wildcard = name === '0.0.0.0' || name === '::';
  }

  /** Replaces the announced public hostnames; each a hostname or a URL (its hostname is used). */
  setPublicHosts(hosts: readonly string[]): void {
    const names = new Set<string>();
    for (const entry of hosts) {
      const name = normalise(entry.includes('://') ? new URL(entry).hostname : entry);
      if (name !== '') names.add(name);
    }
    this.publicHosts = names;
    this.answers.clear();
  }

  get announced(): readonly string[] {
    return [...this.publicHosts];
  }

  /** `authority` is a Host header value or an absolute-form target's authority: `name[:port]` or `[v6][:port]`. */
  allows(authority: string): boolean {
    let answer = this.answers.get(authority);
    if (answer === undefined) {
      answer = this.decide(authority);
      if (!this.wildcard) {
        if (this.answers.size >= MAX_HOST_ANSWERS) this.answers.clear();
        this.answers.set(authority, answer);
      }
    }
    return answer;
  }

  private decide(authority: string): boolean {
    const name = hostname(authority);
    if (name === undefined) return false;
    if (isLoopback(name)) return true;
    if (this.publicHosts.has(name)) return true;
    const bound = normalise(this.bound);
    if (name === bound) return true;
    if ((bound === '0.0.0.0' || bound === '::') && isIP(name) !== 0) return localAddresses().has(name);
    return false;
  }
}

const MAX_HOST_ANSWERS = 64;

function normalise(name: string): string {
  let n = name.trim().toLowerCase();
  if (n.startsWith('[') && n.endsWith(']')) n = n.slice(1, -1);
  // `localhost.` and `localhost` are the same name to a resolver.
  if (n.endsWith('.') && isIP(n) === 0) n = n.slice(0, -1);
  return n;
}

/** The host part of `name[:port]` / `[v6][:port]`, or undefined when that is not its shape. */
function hostname(authority: string): string | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/.exec(authority.trim());
  if (!match) return undefined;
  if (match[1] !== undefined && isIP(match[1]) !== 6) return undefined;
  return normalise(match[1] ?? match[2]);
}

function isLoopback(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) === 4) return name.startsWith('127.');
  if (isIP(name) === 6) return name === '::1' || /^::ffff:127\./.test(name);
  return false;
}

function localAddresses(): Set<string> {
  const addresses = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) addresses.add(normalise(a.address));
  return addresses;
}

// Tokens.

/** What a request may present: the pairing token in force, or the token of a registered device. */
export interface Credentials {
  pairing: string;
  /** The desk's own token (session/paths.ts deskTokenPath), for the routes only the desk may use. */
  desk?: string;
  /** Device tokens (issue 26); none in a relay built without them (tests). */
  devices?: DeviceMatcher;
}

/** The device tokens as admission sees them (store/devices.ts's DeviceRegistry). */
export interface DeviceMatcher {
  /** The digest devices are compared by (salted SHA-256): admission hashes a presented token once, with this, for both compares. */
  digest(token: string): Buffer;
  /** The device whose digest this is, compared in constant time with every device; undefined when none. */
  holderOf(digest: Buffer): string | undefined;
  /** Whether this digest is a removed device's token (then the refusal says so: `auth.device_removed`). */
  wasRevoked?(digest: Buffer): boolean;
}

/**
 * What admits a request at this moment. The relay changes it as it starts and stops; the funnel
 * reads it on every request, so it is plain data rather than the relay's own getters.
 */
export interface AdmissionState {
  /** The token in force; undefined while stopped. */
  token: string | undefined;
  /** The registered devices while running (issue 26), as admission sees them. */
  devices: DeviceMatcher | undefined;
  /** The desk's own token while running (the CLI's desk commands); undefined while stopped. */
  deskToken: string | undefined;
  stopping: boolean;
}

/** Who an admitted request is: a device by id, or (device undefined) a holder of the pairing token. */
export interface Principal {
  device: string | undefined;
}

const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'Bearer realm="deskrelay"' };

/** SHA-256, one call (crypto.hash): a Hash object per request cost more than the hashing. */
const digest = (value: string) => hash('sha256', value, 'buffer');

/**
 * The token in force changes once per start: its digest is worked out once, not per request,
 * with the devices' (salted) digest when there are devices, so that one digest of the presented
 * token serves both compares.
 */
let expectedCache: { token: string; devices: DeviceMatcher | undefined; digest: Buffer } | undefined;
function expectedDigest(token: string, devices: DeviceMatcher | undefined): Buffer {
  if (expectedCache?.token !== token || expectedCache.devices !== devices) {
    expectedCache = { token, devices, digest: devices ? devices.digest(token) : digest(token) };
  }
  return expectedCache.digest;
}

/** Node keeps only the first of repeated Authorization headers; an ambiguous request is refused instead. */
function authorizationHeaders(req: IncomingMessage): string[] {
  const values: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i];
    if (name.length === 13 && name.toLowerCase() === 'authorization') values.push(req.rawHeaders[i + 1]);
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

/** A removed device's token: the phone is told so, rather than that its token is unknown. */
export function deviceRemoved(): HttpError {
  return new HttpError(401, 'auth.device_removed', 'This phone was removed at the desk. Pair it again with the current pairing code if you want it back.', WWW_AUTHENTICATE);
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
 * device cost the same. Digests are compared rather than the strings, so the compare takes the
 * same time whatever the presented value's length or content (timingSafeEqual needs equal
 * lengths). Throws the CONTRACT's 401 when nothing matches.
 */
export function admitToken(presented: string | undefined, expected: string | Credentials): Principal {
  const { pairing, devices } = asCredentials(expected);
  const value = presented ?? '';
  // One digest of the presented token for both compares (hashing it twice was a visible share of accepting a stream).
  const presentedDigest = devices ? devices.digest(value) : digest(value);
  const isPairing = timingSafeEqual(presentedDigest, expectedDigest(pairing, devices));
  const device = devices?.holderOf(presentedDigest);
  if (presented === undefined || (!isPairing && device === undefined)) {
    if (presented !== undefined && devices?.wasRevoked?.(presentedDigest)) throw deviceRemoved();
    throw invalidToken(presented);
  }
  return { device: isPairing ? undefined : device };
}

/**
 * The desk's routes (a pairing code, a device's agent access): only the desk token, which lives
 * in a 0600 file on this machine, admits them; the pairing token and device tokens do not.
 */
export function authenticateDesk(req: IncomingMessage, credentials: Credentials): Principal {
  const headers = authorizationHeaders(req);
  if (headers.length === 0) throw missingToken();
  const presented = headers.length === 1 ? (bearerToken(headers[0]) ?? '') : '';
  const expected = credentials.desk;
  if (expected === undefined || !timingSafeEqual(digest(presented), digest(expected))) {
    throw new HttpError(401, 'auth.invalid_token', 'Only the desk may do this: run the deskrelay command on the desktop itself (it reads the desk token from the DeskRelay config folder).', WWW_AUTHENTICATE);
  }
  return { device: undefined };
}

/** Throws the CONTRACT's 401 unless the request carries exactly one matching bearer token. */
export function authenticate(req: IncomingMessage, expected: string | Credentials): Principal {
  const headers = authorizationHeaders(req);
  if (headers.length === 0) throw missingToken();
  const presented = headers.length === 1 ? bearerToken(headers[0]) : undefined;
  // Compare even when the header is malformed, so a bad header costs the same time as a wrong token.
  return admitToken(presented, expected);
}
