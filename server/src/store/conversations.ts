import { randomUUID } from 'node:crypto';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger';
import type { ChatImage, ChatMessage, ImageMediaType } from '../providers/types';
import { writePrivateFile } from './file';

/** What the store may hold at most (issue 30); past a bound the least recently updated conversations go first. */
export interface ConversationBounds {
  /** Conversations kept. */
  count: number;
  /** Bytes of all conversation files together (photos not counted). */
  bytes: number;
  /** Bytes of all photos together. */
  photoBytes: number;
}

export const DEFAULT_CONVERSATION_BOUNDS: ConversationBounds = { count: 500, bytes: 64 * 1024 * 1024, photoBytes: 256 * 1024 * 1024 };

/** Titles are shown in lists and a tree view: one short line. */
export const MAX_TITLE_LENGTH = 200;
/** A system prompt is text a user typed, not a document. */
export const MAX_SYSTEM_LENGTH = 32 * 1024;

export const conversationsDir = (configDir: string) => join(configDir, 'conversations');

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const isConversationId = (id: string) => ID.test(id);

const EXT: Record<ImageMediaType, string> = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/gif': 'gif', 'image/webp': 'webp' };

/** A photo as stored: its bytes are a file beside the conversation, never inline. */
interface StoredPhoto {
  mediaType: ImageMediaType;
  file: string;
  bytes: number;
}

export interface StoredMessage {
  role: 'user' | 'assistant';
  content: string;
  photos?: StoredPhoto[];
  /** An assistant reply that ended in an error: what the client was told (it is not sent to the model). */
  error?: string;
}

export interface StoredConversation {
  version: 1;
  id: string;
  title: string;
  system: string;
  createdAt: number;
  updatedAt: number;
  messages: StoredMessage[];
}

export interface ConversationSummary {
  id: string;
  title: string;
  updatedAt: number;
  preview: string;
}

export class ConversationTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`A conversation may take at most ${limit} bytes on the desktop; start a new one.`);
  }
}

interface Entry {
  conversation: StoredConversation;
  /** Bytes of its file as last written. */
  bytes: number;
  photoBytes: number;
}

const previewOf = (c: StoredConversation) => (c.messages.at(-1)?.content ?? '').replace(/\s+/g, ' ').trim().slice(0, 120);

/**
 * Conversations kept on the desktop (issue 30, opt-in): one JSON file per conversation
 * (`<id>.json`, 0600, written whole through a temp file and a rename) and its photos as files
 * beside it (`<id>.<n>.<ext>`), in a 0700 folder. Never a token or key: only what was said.
 * Bounded by count, bytes and photo bytes; past a bound the least recently updated
 * conversations are deleted, never the one being written. Writes to one conversation are
 * serialized, so the file always holds a whole, recent state.
 */
export class ConversationStore {
  private readonly entries = new Map<string, Entry>();
  private readonly writes = new Map<string, Promise<void>>();

  private constructor(
    readonly dir: string,
    private readonly bounds: ConversationBounds,
    private readonly logger: Logger,
    /** A conversation was deleted to stay within the bounds (the door tells open clients). */
    private readonly onEvicted: (id: string) => void,
  ) {}

  /** Reads every conversation in `dir` (none when it does not exist); a damaged file is skipped and logged, not deleted. */
  static async open(dir: string, logger: Logger, bounds: Partial<ConversationBounds> = {}, onEvicted: (id: string) => void = () => {}): Promise<ConversationStore> {
    const store = new ConversationStore(dir, { ...DEFAULT_CONVERSATION_BOUNDS, ...bounds }, logger, onEvicted);
    let names: string[] = [];
    try {
      names = await readdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    for (const name of names) {
      const id = name.endsWith('.json') ? name.slice(0, -5) : '';
      if (!isConversationId(id)) continue;
      try {
        const text = await readFile(join(dir, name), 'utf8');
        const conversation = JSON.parse(text) as StoredConversation;
        if (conversation.version !== 1 || conversation.id !== id || !Array.isArray(conversation.messages)) throw new Error('not a conversation');
        store.entries.set(id, { conversation, bytes: Buffer.byteLength(text), photoBytes: photoBytesOf(conversation) });
      } catch (err) {
        logger.warn(`conversations: skipped ${name} (${err instanceof Error ? err.message : 'unreadable'})`);
      }
    }
    return store;
  }

  /** Newest first. */
  list(): ConversationSummary[] {
    return [...this.entries.values()]
      .map(({ conversation: c }) => ({ id: c.id, title: c.title, updatedAt: c.updatedAt, preview: previewOf(c) }))
      .sort((a, b) => b.updatedAt - a.updatedAt);
  }

  get(id: string): StoredConversation | undefined {
    return this.entries.get(id)?.conversation;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Totals held, for tests and the desk. */
  get usage(): { count: number; bytes: number; photoBytes: number } {
    let bytes = 0;
    let photoBytes = 0;
    for (const e of this.entries.values()) {
      bytes += e.bytes;
      photoBytes += e.photoBytes;
    }
    return { count: this.entries.size, bytes, photoBytes };
  }

  async create(title: string, system: string): Promise<StoredConversation> {
    const now = Date.now();
    const conversation: StoredConversation = { version: 1, id: randomUUID(), title, system, createdAt: now, updatedAt: now, messages: [] };
    this.entries.set(conversation.id, { conversation, bytes: 0, photoBytes: 0 });
    await this.save(conversation.id);
    return conversation;
  }

  async update(id: string, change: { title?: string; system?: string }): Promise<StoredConversation | undefined> {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (change.title !== undefined) entry.conversation.title = change.title;
    if (change.system !== undefined) entry.conversation.system = change.system;
    entry.conversation.updatedAt = Date.now();
    await this.save(id);
    return entry.conversation;
  }

  /** Appends a message; its photos are written as files first. Refused (ConversationTooLargeError) when the conversation alone would pass a bound. */
  async append(id: string, message: { role: 'user' | 'assistant'; content: string; images?: readonly ChatImage[]; error?: string }): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry) return false;
    const c = entry.conversation;
    const images = message.images ?? [];
    const adding = images.reduce((n, image) => n + Buffer.byteLength(image.data, 'base64'), 0);
    if (entry.photoBytes + adding > this.bounds.photoBytes) throw new ConversationTooLargeError(this.bounds.photoBytes);
    if (entry.bytes + Buffer.byteLength(JSON.stringify(message.content)) > this.bounds.bytes) throw new ConversationTooLargeError(this.bounds.bytes);
    const photos: StoredPhoto[] = [];
    for (const image of images) {
      const file = `${id}.${c.messages.length}-${photos.length}.${EXT[image.mediaType]}`;
      const data = Buffer.from(image.data, 'base64');
      await writePrivateFile(join(this.dir, file), data);
      photos.push({ mediaType: image.mediaType, file, bytes: data.length });
    }
    // The photos' bytes count before the write, so eviction sees them.
    entry.photoBytes += adding;
    c.messages.push({ role: message.role, content: message.content, ...(photos.length ? { photos } : {}), ...(message.error ? { error: message.error } : {}) });
    c.updatedAt = Date.now();
    await this.save(id);
    return true;
  }

  /**
   * Replaces the messages (a client that ran the reply itself, or edited and resent from an
   * earlier message): the old photos are deleted, the new ones written. Refused like append
   * when the conversation alone would pass a bound.
   */
  async replaceMessages(id: string, messages: readonly { role: 'user' | 'assistant'; content: string; images?: readonly ChatImage[] }[]): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry) return false;
    const c = entry.conversation;
    const photoBytes = messages.reduce((n, m) => n + (m.images ?? []).reduce((k, i) => k + Buffer.byteLength(i.data, 'base64'), 0), 0);
    if (photoBytes > this.bounds.photoBytes) throw new ConversationTooLargeError(this.bounds.photoBytes);
    if (Buffer.byteLength(JSON.stringify(messages.map((m) => m.content))) > this.bounds.bytes) throw new ConversationTooLargeError(this.bounds.bytes);
    for (const m of c.messages) for (const p of m.photos ?? []) await rm(join(this.dir, p.file), { force: true });
    const stored: StoredMessage[] = [];
    for (const [i, m] of messages.entries()) {
      const photos: StoredPhoto[] = [];
      for (const image of m.images ?? []) {
        const file = `${id}.${i}-${photos.length}.${EXT[image.mediaType]}`;
        const data = Buffer.from(image.data, 'base64');
        await writePrivateFile(join(this.dir, file), data);
        photos.push({ mediaType: image.mediaType, file, bytes: data.length });
      }
      stored.push({ role: m.role, content: m.content, ...(photos.length ? { photos } : {}) });
    }
    c.messages = stored;
    entry.photoBytes = photoBytes;
    c.updatedAt = Date.now();
    await this.save(id);
    return true;
  }

  /** The messages as a chat request carries them (photos read back from their files), the system prompt first. */
  async chatMessages(id: string): Promise<ChatMessage[]> {
    const c = this.get(id);
    if (!c) return [];
    const out: ChatMessage[] = c.system ? [{ role: 'system', content: c.system }] : [];
    for (const m of c.messages) {
      if (m.error !== undefined && m.content === '') continue;
      const images = await this.photosOf(m);
      out.push({ role: m.role, content: m.content, ...(images.length ? { images } : {}) });
    }
    return out;
  }

  /** A message's photos as base64, in order; a photo whose file went missing is left out. */
  async photosOf(message: StoredMessage): Promise<ChatImage[]> {
    const images: ChatImage[] = [];
    for (const photo of message.photos ?? []) {
      try {
        images.push({ mediaType: photo.mediaType, data: (await readFile(join(this.dir, photo.file))).toString('base64') });
      } catch {
        this.logger.warn(`conversations: a photo of ${message.role} message is missing (${photo.file})`);
      }
    }
    return images;
  }

  async delete(id: string): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry) return false;
    this.entries.delete(id);
    // A write still running for it removes its own file when it lands (save checks).
    await rm(join(this.dir, `${id}.json`), { force: true });
    for (const m of entry.conversation.messages) for (const p of m.photos ?? []) await rm(join(this.dir, p.file), { force: true });
    return true;
  }

  /** Writes one conversation's file after any write to it still running, then keeps the bounds. */
  private save(id: string): Promise<void> {
    const previous = this.writes.get(id) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(async () => {
      const entry = this.entries.get(id);
      if (!entry) return;
      const text = JSON.stringify(entry.conversation);
      await writePrivateFile(join(this.dir, `${id}.json`), text);
      if (!this.entries.has(id)) {
        await rm(join(this.dir, `${id}.json`), { force: true });
        return;
      }
      entry.bytes = Buffer.byteLength(text);
      await this.enforce(id);
    });
    this.writes.set(id, next);
    void next.finally(() => {
      if (this.writes.get(id) === next) this.writes.delete(id);
    }).catch(() => {});
    return next;
  }

  /** Deletes the least recently updated conversations, never `keep`, until every bound holds. */
  private async enforce(keep: string): Promise<void> {
    const over = () => {
      const u = this.usage;
      return u.count > this.bounds.count || u.bytes > this.bounds.bytes || u.photoBytes > this.bounds.photoBytes;
    };
    while (over()) {
      const oldest = [...this.entries.values()].filter((e) => e.conversation.id !== keep).sort((a, b) => a.conversation.updatedAt - b.conversation.updatedAt)[0];
      if (!oldest) return;
      const id = oldest.conversation.id;
      this.logger.info(`conversations: ${id.slice(0, 8)} deleted to stay within the desktop's bounds`);
      await this.delete(id);
      this.onEvicted(id);
    }
  }
}

function photoBytesOf(c: StoredConversation): number {
  let n = 0;
  for (const m of c.messages) for (const p of m.photos ?? []) n += p.bytes;
  return n;
}

/** Files a conversation uses, for a check that nothing else lies there. */
export async function storedFiles(dir: string): Promise<{ name: string; mode: number }[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  return Promise.all(names.map(async (name) => ({ name, mode: (await stat(join(dir, name))).mode & 0o777 })));
}
