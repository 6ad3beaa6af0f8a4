import { randomBytes, webcrypto } from 'node:crypto';
import { DEVICE_TOKEN_PREFIX } from '../protocol';

// A device's secrets as the registry (store/devices.ts) handles them: its public key and its token.

/** A device's ECDSA P-256 public key as the phone sends it (JWK, public part only). */
export interface DevicePublicKey {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
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

/** A stored key: the same shape rules as at registration (the point itself was checked then). */
export function storedKey(value: unknown): DevicePublicKey | undefined | false {
  if (value === undefined) return undefined;
  const { kty, crv, x, y } = (value ?? {}) as Record<string, unknown>;
  if (kty !== 'EC' || crv !== 'P-256' || typeof x !== 'string' || typeof y !== 'string' || !B64URL_32.test(x) || !B64URL_32.test(y)) return false;
  return { kty, crv, x, y };
}

const SIGNATURE = /^[A-Za-z0-9_-]{86}$/;

/** Whether `signature` is the device's over exactly `message` (base64url, 64-byte P1363). */
export async function verifySigned(key: DevicePublicKey, signature: string, message: string): Promise<boolean> {
  if (!SIGNATURE.test(signature)) return false;
  const bytes = Buffer.from(signature, 'base64url');
  if (bytes.length !== 64) return false;
  try {
    return await webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, await importPublicKey(key), bytes, new TextEncoder().encode(message));
  } catch {
    return false;
  }
}
