/**
 * What this phone keeps of its device (issue 36), in IndexedDB: the device's id, name and `drd_`
 * token, and its ECDSA P-256 key pair. The private key is created non-extractable and kept as the
 * CryptoKey itself (IndexedDB's structured clone keeps it non-extractable): no script, this page's
 * included, can read its bytes, only ask the browser to sign with it. The pairing token is never
 * kept. The page and the service worker (which signs a notification's Allow / Deny) both read it,
 * so this module uses nothing but what a worker has too.
 *
 * IndexedDB may be missing or refused (a private window of an old browser): then memory holds it,
 * and the pairing lasts as long as the page.
 */
export interface KeptDevice {
  id: string;
  name: string;
  token: string;
}

export interface DeviceKeys {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

/** The public half as `POST /v1/devices` and `/v1/devices/claim` take it. */
export interface PublicJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
}

const DB_NAME = 'deskrelay-device';
const STORE = 'kept';
export type Slot = 'device' | 'keys';

const memory = new Map<Slot, unknown>();
let opened: Promise<IDBDatabase | null> | undefined;

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error ?? new Error('IndexedDB request failed'));
  });
}

function open(): Promise<IDBDatabase | null> {
  opened ??= new Promise<IDBDatabase | null>((resolve) => {
    try {
      const r = indexedDB.open(DB_NAME, 1);
      r.onupgradeneeded = () => r.result.createObjectStore(STORE);
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => resolve(null);
      r.onblocked = () => resolve(null);
    } catch {
      resolve(null);
    }
  });
  return opened;
}

async function get(slot: Slot): Promise<unknown> {
  const db = await open();
  if (!db) return memory.get(slot);
  try {
    return await request(db.transaction(STORE, 'readonly').objectStore(STORE).get(slot));
  } catch {
    return memory.get(slot);
  }
}

export async function put(slot: Slot, value: unknown): Promise<void> {
  if (value === null) memory.delete(slot);
  else memory.set(slot, value);
  const db = await open();
  if (!db) return;
  const tx = db.transaction(STORE, 'readwrite');
  const store = tx.objectStore(STORE);
  if (value === null) store.delete(slot);
  else store.put(value, slot);
  await new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error('IndexedDB write failed'));
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB write aborted'));
  }).catch(() => undefined); // memory still holds it for this page
}

export async function readDevice(): Promise<KeptDevice | null> {
  const d = (await get('device')) as Partial<KeptDevice> | undefined;
  if (!d || typeof d.id !== 'string' || typeof d.token !== 'string' || !d.token.startsWith('drd_')) return null;
  return { id: d.id, name: typeof d.name === 'string' ? d.name : '', token: d.token };
}

export const writeDevice = (d: KeptDevice | null): Promise<void> => put('device', d);

export async function readKeys(): Promise<DeviceKeys | null> {
  const k = (await get('keys')) as Partial<DeviceKeys> | undefined;
  return k?.privateKey && k.publicKey ? { privateKey: k.privateKey, publicKey: k.publicKey } : null;
}

/** "Forget this desktop", a removal at the desk: the device and its key go. */
export async function forgetAll(): Promise<void> {
  await put('device', null);
  await put('keys', null);
}
