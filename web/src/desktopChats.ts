/**
 * Chats kept on the desktop (issue 30, when the desktop has it on): the list and every chat come
 * from `/v1/conversations`, so a new relay address or a second phone shows the same chats; this
 * phone's store (IndexedDB, or memory) is the cache for reading offline. A chat made here is
 * created on the desktop at its first save and takes the desktop's id; before each reply its
 * messages are written (PUT), so an edit-and-resend is the desktop's history too; the reply the
 * desktop writes into the conversation itself.
 */
import { ApiError, apiError, bearer, isDroppedConnection, UNREACHABLE_MESSAGE } from './api';
import type { Chat, ChatStore, Message } from './chats';
import type { Photo } from './photos';
import { readText, sseParser } from './sse';
import type { ContentPart, ConversationCreated, ConversationSummary, ConversationUpdated, KeptConversation, WireMessage } from '../../server/src/protocol';
import { CONVERSATION_PATHS } from '../../server/src/protocol/conversations';
import { pathTo } from '../../server/src/protocol/paths';

const PATH = CONVERSATION_PATHS.conversations;
const one = (id: string) => pathTo(CONVERSATION_PATHS.conversation, { id });
const DESKTOP_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether a chat is on the desktop (it took the desktop's id when it was written there). */
export const onDesktop = (id: string): boolean => DESKTOP_ID.test(id);

/** Whether the desktop keeps conversations: its list answers (403 conversations.disabled when it does not). */
export async function desktopKeepsChats(token: string): Promise<boolean> {
  try {
    const res = await fetch(PATH, { headers: bearer(token), cache: 'no-store' });
    return res.ok;
  } catch {
    return false;
  }
}

function fromWire(c: KeptConversation): Chat {
  const messages: Message[] = c.messages
    .filter((m) => !m.pending)
    .map((m) => {
      if (typeof m.content === 'string') return { role: m.role, content: m.content };
      const text = m.content.filter((p): p is Extract<ContentPart, { type: 'text' }> => p.type === 'text').map((p) => p.text).join('');
      const images = m.content.filter((p): p is Extract<ContentPart, { type: 'image' }> => p.type === 'image').map((p) => ({ mediaType: p.mediaType, data: p.data }) as Photo);
      return images.length ? { role: m.role, content: text, images } : { role: m.role, content: text };
    });
  return { id: c.id, title: c.title, created: Date.parse(c.createdAt), updated: Date.parse(c.updatedAt), systemPrompt: c.system, messages };
}

/**
 * What this phone measured and the desktop does not keep (a reply's thinking time, the model that
 * wrote it) stays on the messages the desktop's copy still has as they were.
 */
export function keepOwn(chat: Chat, before: Chat | undefined): Chat {
  chat.messages.forEach((m, i) => {
    const old = before?.messages[i];
    if (!old || old.role !== m.role || old.content !== m.content) return;
    if (old.thoughtMs !== undefined) m.thoughtMs = old.thoughtMs;
    if (old.model !== undefined) m.model = old.model;
  });
  return chat;
}

function toWire(m: Message): WireMessage {
  if (!m.images?.length) return { role: m.role, content: m.content };
  return { role: m.role, content: [...(m.content ? [{ type: 'text' as const, text: m.content }] : []), ...m.images.map((i) => ({ type: 'image' as const, mediaType: i.mediaType, data: i.data }))] };
}

export class DesktopStore implements ChatStore {
  readonly persistent: boolean;

  constructor(
    readonly token: string,
    /** This phone's copy, for reading offline. */
    readonly cache: ChatStore,
  ) {
    this.persistent = cache.persistent;
  }

  private async call(method: string, path: string, body?: unknown): Promise<Response> {
    const res = await fetch(path, {
      method,
      headers: { ...bearer(this.token), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
    if (!res.ok && res.status !== 404) throw await apiError(res);
    return res;
  }

  /** The desktop's chats (fetched again only when changed since the cached copy); the cache alone when the desktop cannot be reached. */
  async list(): Promise<Chat[]> {
    let summaries: ConversationSummary[];
    try {
      summaries = ((await (await this.call('GET', PATH)).json()) as { conversations: ConversationSummary[] }).conversations.filter((s) => s.kind === 'chat');
    } catch {
      return this.cache.list();
    }
    const cached = new Map((await this.cache.list()).map((c) => [c.id, c]));
    for (const s of summaries) {
      const have = cached.get(s.id);
      if (have && have.updated >= Date.parse(s.updatedAt)) continue;
      const res = await this.call('GET', one(s.id)).catch(() => undefined);
      if (res?.ok) await this.cache.put(keepOwn(fromWire((await res.json()) as KeptConversation), have));
    }
    // Deleted on the desktop (or by another phone): gone here too. A chat not yet on the desktop stays.
    const listed = new Set(summaries.map((s) => s.id));
    for (const id of cached.keys()) if (DESKTOP_ID.test(id) && !listed.has(id)) await this.cache.remove(id);
    return this.cache.list();
  }

  /** One write at a time: a chat's first two saves (the message, then its reply) must not both create it on the desktop. */
  private writes: Promise<unknown> = Promise.resolve();

  /** Keeps `chat` here and on the desktop; a chat new to the desktop takes its id (the object is changed in place). */
  put(chat: Chat): Promise<void> {
    const next = this.writes.catch(() => {}).then(() => this.write(chat));
    this.writes = next;
    return next;
  }

  /** Kept here first; a desktop that cannot be reached gets it at the next save (a chat made offline keeps its local id until then). */
  private async write(chat: Chat): Promise<void> {
    await this.cache.put(chat);
    try {
      await this.sync(chat);
    } catch (err) {
      if (isDroppedConnection(err)) return;
      throw err;
    }
  }

  private async sync(chat: Chat): Promise<void> {
    if (!DESKTOP_ID.test(chat.id)) {
      const made = await this.call('POST', PATH, { title: chat.title, system: chat.systemPrompt });
      const { id } = (await made.json()) as ConversationCreated;
      await this.cache.remove(chat.id);
      chat.id = id;
    }
    await this.cache.put(chat);
    let res: Response;
    try {
      res = await this.call('PUT', one(chat.id), { title: chat.title, system: chat.systemPrompt, messages: chat.messages.map(toWire) });
    } catch (err) {
      // The desktop is writing this chat's reply (from here or elsewhere): it keeps the messages; the title and prompt still go.
      if (!(err instanceof ApiError && err.code === 'conversations.busy')) throw err;
      res = await this.call('PUT', one(chat.id), { title: chat.title, system: chat.systemPrompt });
    }
    if (res.status === 404) {
      // Deleted elsewhere meanwhile: this phone's copy becomes a new conversation.
      await this.cache.remove(chat.id);
      chat.id = `c${Date.now().toString(36)}`;
      await this.cache.put(chat);
      await this.sync(chat);
      return;
    }
    // The desktop's time, so the next list does not fetch it again.
    chat.updated = Date.parse(((await res.json()) as ConversationUpdated).updatedAt);
    await this.cache.put(chat);
  }

  /** Keeps `chat` in this phone's copy only (after any write queued): for what the desktop already has. */
  keepHere(chat: Chat): Promise<void> {
    const next = this.writes.catch(() => {}).then(() => this.cache.put(chat));
    this.writes = next;
    return next;
  }

  /** Writes `chat` to the desktop now (after any write queued) and gives its desktop id; throws when the desktop cannot be reached. */
  async flush(chat: Chat): Promise<string> {
    await this.put(chat);
    if (!DESKTOP_ID.test(chat.id)) throw new ApiError(UNREACHABLE_MESSAGE, 0, 'network');
    return chat.id;
  }

  async remove(id: string): Promise<void> {
    await this.cache.remove(id);
    if (DESKTOP_ID.test(id)) await this.call('DELETE', one(id));
  }

  async clear(): Promise<void> {
    for (const c of await this.cache.list()) await this.remove(c.id);
  }
}

/**
 * Follows the desktop's change feed (`/v1/conversations/events`) and calls `changed` on every
 * create, rename, message and delete, from any client; reconnects after a drop with the last
 * event id, until `stop` is called.
 */
export function followChanges(token: string, changed: () => void): () => void {
  const abort = new AbortController();
  let lastId: string | null = null;
  const run = async () => {
    while (!abort.signal.aborted) {
      try {
        // POST: the same stream; quick tunnels hold back a GET event stream until it closes.
        const res = await fetch(CONVERSATION_PATHS.conversationChanges, {
          method: 'POST',
          headers: { ...bearer(token), Accept: 'text/event-stream', ...(lastId ? { 'Last-Event-ID': lastId } : {}) },
          cache: 'no-store',
          signal: abort.signal,
        });
        if (!res.ok || !res.body) {
          // The numbering restarted (a relay restart): follow from now, and read the list again.
          if (res.status === 400) lastId = null;
          else if (res.status === 401 || res.status === 403) return;
        } else {
          const parse = sseParser((_data, id) => {
            if (id) lastId = id;
            changed();
          });
          await readText(res.body, parse);
        }
      } catch {
        /* dropped: try again below */
      }
      if (!abort.signal.aborted) await new Promise((r) => setTimeout(r, 2000));
      changed();
    }
  };
  void run();
  return () => abort.abort();
}

/**
 * The desktop's copy of a conversation as it is now, and the reply it is writing in it (where to
 * follow it from, and its text so far), read in one request so the two agree.
 */
export async function desktopChat(token: string, id: string): Promise<{ chat: Chat; running?: { lastEventId: number; text: string } } | undefined> {
  try {
    const res = await fetch(one(id), { headers: bearer(token), cache: 'no-store' });
    if (!res.ok) return undefined;
    const c = (await res.json()) as KeptConversation;
    const last = c.messages.at(-1);
    const chat = fromWire(c);
    if (c.status !== 'running' || !last?.pending) return { chat };
    return { chat, running: { lastEventId: c.lastEventId, text: typeof last.content === 'string' ? last.content : '' } };
  } catch {
    return undefined;
  }
}
