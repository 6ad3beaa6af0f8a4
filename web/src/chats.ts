/**
 * Chats kept on this phone: IndexedDB (database `deskrelay`, store `chats`), on this phone only;
 * nothing here is ever sent anywhere but to the relay, as the history of a chat you continue.
 * With "Keep chats on this phone" off, chats live in memory only and the database is deleted.
 */
import type { Role } from '../../server/src/protocol';
import type { Photo } from './photos';

export interface Message {
  role: Exclude<Role, 'system'>;
  /** As received: an assistant's reply keeps its thinking (shown folded, never sent back). */
  content: string;
  /** A user message's photos, downscaled as sent. */
  images?: Photo[];
  /** A reply's thinking time, as measured while it streamed ("Thought for 4 s"). */
  thoughtMs?: number;
  /** The model the desktop named when the reply was asked for. */
  model?: string;
}

export interface Chat {
  id: string;
  /** From the first message, until the user renames it. */
  title: string;
  created: number;
  updated: number;
  /** Sent first, as the `system` message, when not empty. */
  systemPrompt: string;
  messages: Message[];
}

export interface ChatStore {
  readonly persistent: boolean;
  list(): Promise<Chat[]>;
  put(chat: Chat): Promise<void>;
  remove(id: string): Promise<void>;
  clear(): Promise<void>;
}

export const DB_NAME = 'deskrelay';
const STORE = 'chats';

/** Storage is full (or the browser refuses to grow it): said plainly, with what to do. */
export class QuotaError extends Error {
  constructor() {
    super('This phone has no room left to save chats. Delete some chats (photos take the most room) (or turn off "Keep chats on this phone") and try again; this chat stays on screen until you leave the page.');
  }
}

function isQuota(err: unknown): boolean {
  const e = err as { name?: string; inner?: { name?: string } } | null;
  return !!e && (e.name === 'QuotaExceededError' || e.inner?.name === 'QuotaExceededError' || /quota/i.test(String((e as Error).message ?? '')));
}

export function newChat(): Chat {
  const now = Date.now();
  return { id: `c${now.toString(36)}${Math.random().toString(36).slice(2, 8)}`, title: '', created: now, updated: now, systemPrompt: '', messages: [] };
}

/** A chat's title from its first message: one line, at most 60 characters. */
export function titleFrom(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 59).trimEnd()}…` : line || 'New chat';
}

const byRecent = (a: Chat, b: Chat) => b.updated - a.updated;

export class MemoryStore implements ChatStore {
  readonly persistent = false;
  private readonly chats = new Map<string, Chat>();
  async list() {
    return [...this.chats.values()].map((c) => structuredClone(c)).sort(byRecent);
  }
  async put(chat: Chat) {
    this.chats.set(chat.id, structuredClone(chat));
  }
  async remove(id: string) {
    this.chats.delete(id);
  }
  async clear() {
    this.chats.clear();
  }
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export class IdbStore implements ChatStore {
  readonly persistent = true;
  private db: Promise<IDBDatabase> | undefined;

  private destroyed = false;

  private open(): Promise<IDBDatabase> {
    // A late save through a store whose database was deleted must not bring the database back.
    if (this.destroyed) return Promise.reject(new Error('Chats are no longer kept on this phone.'));
    this.db ??= new Promise((resolve, reject) => {
      const req = indexedDB.open(DB_NAME, 1);
      req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: 'id' });
      req.onsuccess = () => {
        const db = req.result;
        // Another tab deleting the database (Keep chats off) must not be blocked by this one.
        db.onversionchange = () => {
          db.close();
          this.db = undefined;
        };
        resolve(db);
      };
      req.onerror = () => reject(req.error);
      req.onblocked = () => reject(new Error('The chat storage is busy in another tab.'));
    });
    return this.db;
  }

  private async run<T>(mode: IDBTransactionMode, work: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
    const db = await this.open();
    try {
      const tx = db.transaction(STORE, mode);
      const result = request(work(tx.objectStore(STORE)));
      result.catch(() => {}); // its failure is the transaction's, reported below
      await new Promise<void>((resolve, reject) => {
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(tx.error);
        tx.onabort = () => reject(tx.error ?? new Error('The chat storage refused the change.'));
      });
      return await result;
    } catch (err) {
      throw isQuota(err) ? new QuotaError() : err;
    }
  }

  async list() {
    return (await this.run('readonly', (s) => s.getAll() as IDBRequest<Chat[]>)).sort(byRecent);
  }
  async put(chat: Chat) {
    await this.run('readwrite', (s) => s.put(structuredClone(chat)));
  }
  async remove(id: string) {
    await this.run('readwrite', (s) => s.delete(id));
  }
  async clear() {
    await this.run('readwrite', (s) => s.clear());
  }

  /** Deletes the whole database (Keep chats on this phone turned off). */
  async destroy(): Promise<void> {
    this.destroyed = true;
    const db = await this.db?.catch(() => undefined);
    db?.close();
    this.db = undefined;
    await request(indexedDB.deleteDatabase(DB_NAME)).catch(() => {});
  }
}
