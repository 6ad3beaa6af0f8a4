/**
 * What a phone registers with (issue 36): its name and its public key. Used at pairing only, so
 * a chunk of its own. The key pair is ECDSA P-256, its private half non-extractable, kept in
 * IndexedDB by keep.ts.
 */
import { registrationMessage, type RegistrationProof } from '../../server/src/protocol/registration';
import { base64url } from './agent/sign';
import { put, readKeys, type DeviceKeys, type PublicJwk } from './keep';

/**
 * This phone's key pair: the kept one (so pairing again is the same device at the desk), or a new
 * one, kept. Null where WebCrypto cannot make one (an insecure context: plain http off loopback).
 */
export async function deviceKeys(): Promise<DeviceKeys | null> {
  const kept = await readKeys();
  if (kept) return kept;
  if (!globalThis.crypto?.subtle) return null;
  let pair: CryptoKeyPair;
  try {
    // extractable false: applies to the private key; a public key is always exportable.
    pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  } catch {
    return null;
  }
  const keys = { privateKey: pair.privateKey, publicKey: pair.publicKey };
  await put('keys', keys);
  return keys;
}

export async function publicJwk(publicKey: CryptoKey): Promise<PublicJwk> {
  const jwk = await crypto.subtle.exportKey('jwk', publicKey);
  return { kty: 'EC', crv: 'P-256', x: jwk.x ?? '', y: jwk.y ?? '' };
}

/** What a registration or claim carries of the key: the public half and proof of holding the private one. */
export interface SignedKey {
  publicKey: PublicJwk;
  proof: RegistrationProof;
}

/**
 * This phone's public key as the desk takes it, with a fresh proof (its signature over the key,
 * `name` exactly as sent, and now): without it the desk would let anyone who knows the public key
 * re-register this device. Undefined where WebCrypto cannot make a key (insecure context).
 */
export async function mySignedKey(name: string): Promise<SignedKey | undefined> {
  const keys = await deviceKeys();
  if (!keys) return undefined;
  const publicKey = await publicJwk(keys.publicKey);
  const issuedAt = new Date().toISOString();
  const data = new TextEncoder().encode(registrationMessage(publicKey.x, publicKey.y, name, issuedAt));
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, keys.privateKey, data);
  return { publicKey, proof: { issuedAt, signature: base64url(new Uint8Array(signature)) } };
}

/** A name the user can change: the device and the browser, e.g. "iPhone Safari", "Android Chrome". */
export function defaultDeviceName(userAgent: string): string {
  const ua = userAgent;
  const device = /iPhone/.test(ua)
    ? 'iPhone'
    : /iPad/.test(ua) || (/Macintosh/.test(ua) && /Mobile\//.test(ua))
      ? 'iPad'
      : /Android/.test(ua)
        ? 'Android'
        : /Windows/.test(ua)
          ? 'Windows'
          : /Macintosh|Mac OS X/.test(ua)
            ? 'Mac'
            : /CrOS/.test(ua)
              ? 'Chromebook'
              : /Linux/.test(ua)
                ? 'Linux'
                : 'Phone';
  // Order matters: Edge and Opera say Chrome too, Chrome says Safari, iOS browsers say Safari.
  const browser = /Edg(A|iOS)?\//.test(ua)
    ? 'Edge'
    : /OPR\/|Opera/.test(ua)
      ? 'Opera'
      : /Firefox\/|FxiOS\//.test(ua)
        ? 'Firefox'
        : /SamsungBrowser\//.test(ua)
          ? 'Samsung Internet'
          : /Chrome\/|CriOS\//.test(ua)
            ? 'Chrome'
            : /Safari\//.test(ua)
              ? 'Safari'
              : 'Browser';
  return `${device} ${browser}`;
}
