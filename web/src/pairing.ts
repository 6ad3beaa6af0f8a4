/**
 * Pairing: the token arrives in the link's fragment (`#token=…`, never sent to a server) or in the
 * pasted pairing JSON. The token is a secret: it is kept in memory and this tab's sessionStorage
 * (on this phone's localStorage only with "Remember this desktop"), sent only in the Authorization
 * header or the WebSocket subprotocol, never in a URL query, the console or the service worker.
 * Once the phone registered as a device, its own device token is kept instead: the pairing token
 * is not kept at all.
 */
import { settings } from './settings';
import { localStore, sessionStore } from './storage';

export interface Pairing {
  url: string;
  /** The pairing token until this phone registers as a device, then its own `drd_` token. */
  token: string;
  /** This phone as a device of the desktop (issue 26): its id and name there, once registered. */
  deviceId?: string;
  deviceName?: string;
}

export const TOKEN_RE = /^[A-Za-z0-9._~+/=-]{8,512}$/;
const SESSION_KEY = 'deskrelay.pairing';

/** The token in the address's fragment, if any; the fragment is taken out of the address bar. */
export function readFragment(): string | null {
  const hash = location.hash.replace(/^#/, '');
  if (!hash) return null;
  const params = new URLSearchParams(hash);
  const after = Number(params.get('wsAfterMs'));
  if (params.has('wsAfterMs') && Number.isFinite(after) && after >= 0) settings.wsAfterMs = after;
  const token = params.get('token');
  // Take the secret out of the address bar (and so out of history, bookmarks and shares).
  try {
    window.history.replaceState(null, '', location.pathname);
  } catch {
    /* a sandboxed page may refuse; the fragment never reaches a server anyway */
  }
  return token;
}

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

function valid(p: unknown): Pairing | null {
  if (!p || typeof p !== 'object') return null;
  const { url, token, deviceId, deviceName } = p as Record<string, unknown>;
  if (typeof token !== 'string' || !TOKEN_RE.test(token)) return null;
  const pairing: Pairing = { url: typeof url === 'string' && url ? url : location.origin, token };
  if (typeof deviceId === 'string' && deviceId) {
    pairing.deviceId = deviceId;
    pairing.deviceName = typeof deviceName === 'string' ? deviceName : '';
  }
  return pairing;
}

/** The pairing kept for this tab, or remembered on this phone, if any. */
export function loadPairing(): Pairing | null {
  return valid(sessionStore.read(SESSION_KEY)) ?? valid(localStore.read(SESSION_KEY));
}

/** Whether this phone remembers a desktop ("Remember this desktop"). */
export function remembered(): boolean {
  return valid(localStore.read(SESSION_KEY)) !== null;
}

/**
 * Keeps the pairing for this tab (sessionStorage: gone with the tab), and on this phone
 * (localStorage) only when `remember` is set; null forgets it everywhere.
 */
export function savePairing(p: Pairing | null, remember = false): void {
  if (p) sessionStore.write(SESSION_KEY, p);
  else sessionStore.remove(SESSION_KEY);
  if (p && remember) localStore.write(SESSION_KEY, p);
  else localStore.remove(SESSION_KEY);
}
