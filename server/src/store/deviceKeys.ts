import { randomBytes, webcrypto } from 'node:crypto';
import { DEVICE_TOKEN_PREFIX } from '../protocol';

// A device's secrets as the registry (store/devices.ts) handles them: its public key, its token,
// and the constant-time compare of token digests.

/** A device's ECDSA P-256 public key as the phone sends it (JWK, public part only). */
export interface DevicePublicKey {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
}

/** 32-bit words per digest. */
export const WORDS = 8;
/** Copies a digest's words into `into` at word `at` (no new ArrayBuffer per request: the slice was a visible share of accepting a stream). */
export function wordsInto(digest: Buffer, into: Uint32Array, at: number): Uint32Array {
  for (let w = 0; w < WORDS; w++) into[at + w] = digest.readUInt32LE(w * 4);
  return into;
}
const B64URL_32 = /^[A-Za-z0-9_-]{43}$/;

/**
 * A public key as sent at registration, checked: a JWK `{"kty":"EC","crv":"P-256","x","y"}`
 * whose coordinates are base64url of 32 bytes and whose point imports with WebCrypto (is on
 * the curve). Undefined when it is not; only those four fields are kept.
 */
export async function cleanPublicKey(value: unknown): Promise<DevicePublicKey | undefined> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { kty, crv, x, y } = value as Record<string, unknown>;
  if (kty !== 'EC' || crv !== 'P-256' || typeof x !== 'string' || typeof y !== 'string' || !B64URL_32.test(x) || !B64URL_32.test(y)) return undefined;
  if (Buffer.from(x, 'base64url').length !== 32 || Buffer.from(y, 'base64url').length !== 32) return undefined;
  const key: DevicePublicKey = { kty, crv, x, y };
  try {
    await importPublicKey(key);
  } catch {
    return undefined;
  }
  return key;
}

/** The key as WebCrypto verifies with it (ECDSA P-256). */
export function importPublicKey(key: DevicePublicKey): Promise<webcrypto.CryptoKey> {
  return webcrypto.subtle.importKey('jwk', { ...key }, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
}

export const sameKey = (a: DevicePublicKey | undefined, b: DevicePublicKey) => a !== undefined && a.x === b.x && a.y === b.y;

/** `drd_` + 43 base64url characters of 32 random bytes: as strong as the pairing token. */
export function newDeviceToken(): string {
  return `${DEVICE_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/**
 * Which of `count` digests (laid end to end in `digests`, WORDS words each) equals `needle`, or
 * -1. Every word of every digest is XORed and OR-ed in, and the answer is picked without a
 * branch on the data, so the time depends on `count` alone: never on which digest matched, if
 * any, or on how many leading words did (the compare tweetnacl's `verify` does, over all
 * devices). One native timingSafeEqual per device cost ~0.2 µs in call overhead alone.
 */
export function matchDigest(needle: Uint32Array, digests: ArrayLike<number>, count: number): number {
  let found = -1;
  for (let d = 0; d < count; d++) {
    let diff = 0;
    for (let w = 0; w < WORDS; w++) diff |= digests[d * WORDS + w]! ^ needle[w]!;
    // found stays the first match: (diff === 0) & (found < 0) as a mask, not a branch.
    const take = -((diff === 0 ? 1 : 0) & (found < 0 ? 1 : 0));
    found = (d & take) | (found & ~take);
  }
  return found;
}

/** A stored key: the same shape rules as at registration (the point itself was checked then). */
export function storedKey(value: unknown): DevicePublicKey | undefined | false {
  if (value === undefined) return undefined;
  const { kty, crv, x, y } = (value ?? {}) as Record<string, unknown>;
  if (kty !== 'EC' || crv !== 'P-256' || typeof x !== 'string' || typeof y !== 'string' || !B64URL_32.test(x) || !B64URL_32.test(y)) return false;
  return { kty, crv, x, y };
}
