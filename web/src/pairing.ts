/**
 * Pairing: the pairing token arrives in the link's fragment (`#token=…`, never sent to a server),
 * in the pasted pairing JSON or a scanned QR code; or a one-time pairing code is typed. Either is
 * used once, to register this phone as a device of the desktop (connection.ts), and never kept:
 * what the phone keeps, by default and across restarts, is its device (id, name, `drd_` token) and
 * its key, in IndexedDB (keep.ts). Tokens go only in the Authorization header or the WebSocket
 * subprotocol, never in a URL query or the console.
 */
import type { PairingPayload } from '../../server/src/protocol';
import { isDeviceToken } from './devices';
import { readDevice, writeDevice } from './keep';
import { settings } from './settings';
import { localStore, sessionStore } from './storage';

/** The pairing payload as this phone keeps it: `token` is the pairing token until this phone registers as a device, then its own `drd_` token. */
export interface Pairing extends PairingPayload {
  /** This phone as a device of the desktop (issue 26): its id and name there, once registered. */
  deviceId?: string;
  deviceName?: string;
}

export const TOKEN_RE = /^[A-Za-z0-9._~+/=-]{8,512}$/;
/** Where pairings were kept before issue 36 (read once, to move them). */
const LEGACY_KEY = 'deskrelay.pairing';

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

function valid(p: unknown): Pairing | null {
  if (!p || typeof p !== 'object') return null;
  const { token, deviceId, deviceName } = p as Record<string, unknown>;
  if (typeof token !== 'string' || !TOKEN_RE.test(token)) return null;
  const pairing: Pairing = { url: location.origin, token };
  if (typeof deviceId === 'string' && deviceId) {
    pairing.deviceId = deviceId;
    pairing.deviceName = typeof deviceName === 'string' ? deviceName : '';
  }
  return pairing;
}

/**
 * Before issue 36 the pairing lived in sessionStorage (and localStorage with "Remember this
 * desktop"). A device kept there moves to IndexedDB (it has no key: it chats, and pairing again
 * gives it one); a pairing token kept there is used once more, to register, and never written back.
 */
async function migrated(): Promise<Pairing | null> {
  const old = valid(sessionStore.read(LEGACY_KEY)) ?? valid(localStore.read(LEGACY_KEY));
  sessionStore.remove(LEGACY_KEY);
  localStore.remove(LEGACY_KEY);
  if (old?.deviceId && isDeviceToken(old.token)) await writeDevice({ id: old.deviceId, name: old.deviceName ?? '', token: old.token });
  return old;
}

/** The device this phone keeps (IndexedDB), if any: the installed app opens paired. */
export async function loadPairing(): Promise<Pairing | null> {
  const legacy = await migrated();
  const d = await readDevice();
  if (d) return { url: location.origin, token: d.token, deviceId: d.id, deviceName: d.name };
  return legacy;
}

/**
 * Keeps this phone's device (its id, name and token) in IndexedDB; a pairing that is not a device
 * yet (a pairing token) is kept in memory only. Null forgets the device (not its key: see forgetAll).
 */
export async function savePairing(p: Pairing | null): Promise<void> {
  if (p?.deviceId && isDeviceToken(p.token)) await writeDevice({ id: p.deviceId, name: p.deviceName ?? '', token: p.token });
  else if (!p) await writeDevice(null);
}
