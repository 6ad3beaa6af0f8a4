/**
 * Reading a pairing the user brings: the pasted pairing JSON or a scanned QR code. Only the
 * pairing screen (a chunk of its own) uses these.
 */
import { TOKEN_RE, type Pairing } from './pairing';

/** Parses the pasted pairing JSON: `{"url": "...", "token": "..."}`. Throws a user-facing message. */
export function parsePairing(text: string): Pairing {
  const trimmed = text.trim();
  if (!trimmed) throw new Error('Paste the pairing JSON shown on your desktop.');
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    throw new Error('That is not valid JSON. Copy the whole pairing JSON, from { to }.');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('The pairing JSON must be an object with "url" and "token".');
  const { url: rawUrl, token } = value as Record<string, unknown>;
  if (typeof rawUrl !== 'string' || !rawUrl) throw new Error('The pairing JSON has no "url".');
  if (typeof token !== 'string' || !token) throw new Error('The pairing JSON has no "token".');
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new Error('The "url" in the pairing JSON is not a URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('The "url" must start with https:// or http://.');
  if (!TOKEN_RE.test(token)) throw new Error('The "token" in the pairing JSON does not look like a DeskRelay token.');
  return { url: url.origin, token };
}

/**
 * What a scanned QR code says: the pairing JSON (`deskrelay serve`'s terminal code) or the web
 * client's link with `#token=…` (the pairing panel's). Throws a user-facing message for anything else.
 */
export function pairingFromScan(text: string): Pairing {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) return parsePairing(trimmed);
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new Error('That QR code is not a DeskRelay pairing code.');
  }
  const token = new URLSearchParams(url.hash.replace(/^#/, '')).get('token');
  if (!token || !TOKEN_RE.test(token)) throw new Error('That QR code is not a DeskRelay pairing code.');
  return { url: url.origin, token };
}
