import { JsonEventLog } from '../../streams/frameLog';
import { CancelReason, STOPPED_BY_CLIENT, type TerminalEvent } from '../../chat/events';
import { ChatError } from '../../chat/errors';
import { parseChatRequest } from '../../chat/request';
import type { ChatHandle } from '../../chat/service';
import { SpecReply } from '../../chat/specReply';
import type { ContextSlice, DoorRoute } from '../context';
import { HttpError } from '../../http/errors';
import { followLog, sendJson, sendNoContent } from '../../http/writers';
import type { RouteRequest } from '../../http/route';
import type { ChatMessage } from '../../providers/types';
import {
  ConversationStore,
  ConversationTooLargeError,
  conversationsDir,
  MAX_SYSTEM_LENGTH,
  MAX_TITLE_LENGTH,
  type ConversationBounds,
  type StoredConversation,
} from '../../store/conversations';
import { type DoorFactory, itemPaths } from '../door';
import { invalidBody as invalid, jsonObject, readJsonBody } from '../../http/request';
import {
  conversationMarkdown,
  markdownFileName,
  PATHS,
  type ConversationChange,
  type ConversationCreated,
  type ConversationEvent,
  type ConversationSummary,
  type ConversationUpdated,
  type ReplyStarted,
} from '../../protocol';

/** The door's paths (docs/conversations.md). */
export const CONVERSATIONS_PATH = PATHS.conversations;
export const CONVERSATION_CHANGES_PATH = PATHS.conversationChanges;
const { one: ONE, events: EVENTS, messages: MESSAGES, stop: STOP, sub } = itemPaths(CONVERSATIONS_PATH);
const REPLY = sub('reply');
const EXPORT = sub('export');

export type { ConversationChange, ConversationEvent, ReplyStatus } from '../../protocol';

const DEFAULT_HOW_TO_ENABLE = 'Turn it on at the desk: "keepConversations": true in config.json (deskrelay serve), or the deskrelay.keepConversations setting in VS Code.';
/** Bytes of events kept per conversation for a resume; the conversation itself is always whole in GET. */
const LOG_BYTES = 512 * 1024;
/** Conversations whose event logs stay in memory while nobody follows them. */
const IDLE_LOGS = 64;
const CHANGES_BYTES = 256 * 1024;

const notFound = () => new HttpError(404, 'conversations.not_found', 'No conversation by that id: it was deleted, or dropped to keep the desktop within its bounds.');
const tooLarge = (err: ConversationTooLargeError) => new HttpError(413, 'conversations.too_large', err.message);
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** `title` and `system` of a create or update; undefined when absent. */
function fields(body: Record<string, unknown>, shape: string): { title?: string; system?: string } {
  const out: { title?: string; system?: string } = {};
  if (body.title !== undefined) {
    if (typeof body.title !== 'string' || body.title.length > MAX_TITLE_LENGTH || CONTROL.test(body.title)) {
      throw invalid(`"title" must be one line of at most ${MAX_TITLE_LENGTH} characters: ${shape}.`);
    }
    out.title = body.title.trim();
  }
  if (body.system !== undefined) {
    if (typeof body.system !== 'string' || body.system.length > MAX_SYSTEM_LENGTH) throw invalid(`"system" must be a string of at most ${MAX_SYSTEM_LENGTH} characters: ${shape}.`);
    out.system = body.system;
  }
  return out;
}

/** A reply running on the desktop: it belongs to the conversation, not to the request that started it. */
interface LiveReply {
  text: string;
  handle: ChatHandle | undefined;
  stopped: boolean;
}

/** A stored message as a chat request carries it: content a string, or parts when it has photos. */
async function wireMessages(store: ConversationStore, c: StoredConversation) {
  const out: Record<string, unknown>[] = [];
  for (const m of c.messages) {
    const images = await store.photosOf(m);
    const content = images.length === 0 ? m.content : [...(m.content ? [{ type: 'text', text: m.content }] : []), ...images.map((i) => ({ type: 'image', ...i }))];
    out.push({ role: m.role, content, ...(m.error ? { error: m.error } : {}) });
  }
  return out;
}

/**
 * Conversations kept on the desktop (issue 30, opt-in): CRUD over the store, a message that
 * starts a reply run by the chat service and owned by the conversation (any client follows it
 * from the conversation's event log and resumes after Last-Event-ID), and one change feed.
 * With the setting off every path answers 403 conversations.disabled and nothing is read or
 * written.
 */
export interface ConversationsOptions {
  /**
   * Keep conversations on the desktop (deskrelay.keepConversations, "keepConversations" in
   * config.json); read on every request, so a settings change applies at once. Default off:
   * every /v1/conversations path answers 403 conversations.disabled and nothing is written.
   */
  keepConversations?: () => boolean;
  /** Where conversations are kept; default `<configDir>/conversations` (the extension passes its global storage). */
  conversationsDir?: string;
  /** The store's bounds (count, bytes, photo bytes); defaults in store/conversations.ts. */
  conversationBounds?: Partial<ConversationBounds>;
  /** How the 403 tells the user to turn conversations on, in this host's words. */
  conversationsHowToEnable?: string;
}

/**
 * What the conversations door reads of the relay: the chat service (replies), `replies` (the
 * agent's sessions in the list), bodies, where it keeps conversations, the log, keep-alives.
 */
export type ConversationsContext = ContextSlice<'chat' | 'replies' | 'bodies', 'configDir' | 'logger' | 'bodyTimeoutMs' | 'keepAliveMs', ConversationsOptions>;
type ConversationsRoute = DoorRoute<ConversationsContext>;

export const conversationsDoor: DoorFactory<ConversationsContext> = (ctx) => {
  const { logger } = ctx.options;
  const dir = ctx.options.conversationsDir ?? conversationsDir(ctx.options.configDir);
  const changes = new JsonEventLog<ConversationChange>(CHANGES_BYTES, { of: 'the change feed', whole: `GET ${PATHS.conversations} for the whole list` });
  const logs = new Map<string, JsonEventLog<ConversationEvent>>();
  const replies = new Map<string, LiveReply>();
  let opening: Promise<ConversationStore> | undefined;

  const changed = (type: ConversationChange['type'], id: string) => changes.append({ type, id });

  const store = async (): Promise<ConversationStore> => {
    if (ctx.options.keepConversations?.() !== true) {
      throw new HttpError(403, 'conversations.disabled', `Conversations are not kept on the desktop. ${ctx.options.conversationsHowToEnable ?? DEFAULT_HOW_TO_ENABLE}`);
    }
    opening ??= ConversationStore.open(dir, logger, ctx.options.conversationBounds, (id) => {
      dropLog(id);
      changed('deleted', id);
    });
    try {
      return await opening;
    } catch (err) {
      opening = undefined;
      logger.error(`conversations: cannot read ${dir} (${err instanceof Error ? (err as NodeJS.ErrnoException).code ?? err.name : 'error'})`);
      throw err;
    }
  };

  const find = async (req: RouteRequest): Promise<{ s: ConversationStore; c: StoredConversation }> => {
    const s = await store();
    const c = s.get(req.params.id ?? '');
    if (!c) throw notFound();
    return { s, c };
  };

  /** The conversation's event log, made on first use; idle ones past IDLE_LOGS are forgotten oldest first (a resume then re-reads the conversation). */
  const logOf = (id: string): JsonEventLog<ConversationEvent> => {
    let log = logs.get(id);
    if (log) {
      logs.delete(id);
    } else {
      log = new JsonEventLog<ConversationEvent>(LOG_BYTES, { of: 'a conversation', whole: 'GET the conversation for all its messages' });
    }
    logs.set(id, log);
    if (logs.size > IDLE_LOGS) {
      for (const [other, l] of logs) {
        if (logs.size <= IDLE_LOGS) break;
        if (other !== id && l.attached === 0 && !replies.has(other)) logs.delete(other);
      }
    }
    return log;
  };

  const dropLog = (id: string) => {
    replies.get(id)?.handle?.abort(new CancelReason('The conversation was deleted.'));
    logs.get(id)?.closeAll();
    logs.delete(id);
  };

  const route = (method: ConversationsRoute['method'], path: string, handle: ConversationsRoute['handle']): ConversationsRoute => ({ method, path, auth: true, handle });

  const create = route('POST', CONVERSATIONS_PATH, async (req, res, c) => {
    const s = await store();
    const shape = '{"title"?: "…", "system"?: "…"}';
    const given = fields(jsonObject((await readJsonBody(req, c)).json, shape), shape);
    const made = await s.create(given.title ?? '', given.system ?? '');
    changed('created', made.id);
    sendJson(res, 201, { id: made.id } satisfies ConversationCreated);
  });

  const list = route('GET', CONVERSATIONS_PATH, async (_req, res) => {
    const s = await store();
    const chats = s.list().map((x) => ({ ...x, kind: 'chat' as const, preview: replies.get(x.id)?.text.slice(0, 120) || x.preview }));
    // The agent's sessions live in memory for this run (docs/agent.md); GET /v1/agent/sessions/<id> opens one.
    const agents = ctx.replies.agentSessions().map((x) => ({ ...x, kind: 'agent' as const }));
    sendJson(res, 200, {
      conversations: [...chats, ...agents].sort((a, b) => b.updatedAt - a.updatedAt).map((x): ConversationSummary => ({ id: x.id, title: x.title, updatedAt: new Date(x.updatedAt).toISOString(), kind: x.kind, preview: x.preview })),
    });
  });

  const get = route('GET', ONE, async (req, res) => {
    const { s, c } = await find(req);
    const live = replies.get(c.id);
    const messages = await wireMessages(s, c);
    // The reply in progress is part of the conversation; follow it from lastEventId.
    if (live) messages.push({ role: 'assistant', content: live.text, pending: true });
    sendJson(res, 200, {
      id: c.id,
      kind: 'chat',
      title: c.title,
      system: c.system,
      createdAt: new Date(c.createdAt).toISOString(),
      updatedAt: new Date(c.updatedAt).toISOString(),
      status: live ? 'running' : 'idle',
      messages,
      lastEventId: logOf(c.id).lastId,
    });
  });

  const update = route('PUT', ONE, async (req, res, ctx2) => {
    const { s, c } = await find(req);
    const shape = '{"title"?: "…", "system"?: "…", "messages"?: [{"role": "user" | "assistant", "content"}]}';
    const body = jsonObject((await readJsonBody(req, ctx2, { images: true })).json, shape);
    const given = fields(body, shape);
    const messages = body.messages === undefined ? undefined : historyOf(body.messages, shape);
    if (messages && replies.has(c.id)) throw new HttpError(409, 'conversations.busy', 'This conversation is replying; its messages cannot be replaced until the reply ends or is stopped.');
    try {
      if (messages && !(await s.replaceMessages(c.id, messages))) throw notFound();
    } catch (err) {
      if (err instanceof ConversationTooLargeError) throw tooLarge(err);
      throw err;
    }
    const done = await s.update(c.id, given);
    if (!done) throw notFound();
    changed('changed', c.id);
    sendJson(res, 200, { id: done.id, title: done.title, system: done.system, updatedAt: new Date(done.updatedAt).toISOString() } satisfies ConversationUpdated);
  });

  const remove = route('DELETE', ONE, async (req, res) => {
    const { s, c } = await find(req);
    dropLog(c.id);
    await s.delete(c.id);
    changed('deleted', c.id);
    logger.info(`conversations: ${c.id.slice(0, 8)} deleted`);
    sendNoContent(res);
  });

  const exportMarkdown = route('GET', EXPORT, async (req, res) => {
    const { c } = await find(req);
    const body = conversationMarkdown(c, replies.get(c.id)?.text);
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/markdown; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="${markdownFileName(c.title)}"`);
    res.setHeader('Cache-Control', 'no-store');
    res.end(body);
  });

  const events = (method: 'GET' | 'POST'): ConversationsRoute =>
    route(method, EVENTS, async (req, res, c) => {
      const { c: conv } = await find(req);
      followLog(req, res, c.options.keepAliveMs, logOf(conv.id), 'this conversation');
    });

  // Exact paths win over `:id`: this is never taken for a conversation named "events".
  const feed = (method: 'GET' | 'POST'): ConversationsRoute =>
    route(method, CONVERSATION_CHANGES_PATH, async (req, res, c) => {
      await store();
      followLog(req, res, c.options.keepAliveMs, changes, 'the change feed');
    });

  const postMessage = route('POST', MESSAGES, async (req, res, c) => {
    const { s, c: conv } = await find(req);
    const shape = '{"content": "…" or [{"type": "text", "text"}, {"type": "image", "mediaType", "data"}]}';
    const body = jsonObject((await readJsonBody(req, c, { images: true })).json, shape);
    if (body.content === undefined) throw invalid(`"content" is required: ${shape}.`);
    const message = parseUserMessage(body.content);
    if (message.content.trim() === '' && !message.images?.length) throw invalid(`"content" must not be empty: ${shape}.`);
    sendJson(res, 202, { lastEventId: await startReply(c, s, conv, message) } satisfies ReplyStarted);
  });

  /** A reply to the conversation as it stands (a client that wrote the user's message with PUT: an edit, a regenerate). */
  const reply = route('POST', REPLY, async (req, res, c) => {
    const { s, c: conv } = await find(req);
    if (conv.messages.at(-1)?.role !== 'user') throw invalid('The conversation does not end with a message from the user: send one (POST …/messages) instead.');
    sendJson(res, 202, { lastEventId: await startReply(c, s, conv, undefined) } satisfies ReplyStarted);
  });

  /**
   * Starts the reply (429 and 412 before anything is kept), appending `message` first when
   * given; resolves with the Last-Event-ID that follows this turn from its start.
   */
  async function startReply(c: ConversationsContext, s: ConversationStore, conv: StoredConversation, message: ChatMessage | undefined): Promise<number> {
    if (replies.has(conv.id)) throw new HttpError(409, 'conversations.busy', 'This conversation is already replying; wait for it or stop it (POST …/stop) first.');
    const provider = c.chat.provider();
    const live: LiveReply = { text: '', handle: undefined, stopped: false };
    replies.set(conv.id, live);
    const log = logOf(conv.id);
    let handle: ChatHandle;
    let terminal: TerminalEvent | undefined;
    try {
      const history = await s.chatMessages(conv.id);
      handle = c.chat.start(provider, message ? [...history, message] : history, new SpecReply({
        token: (delta) => {
          live.text += delta;
          log.append({ type: 'text', delta });
        },
        flush: () => {},
        terminal: (event) => (terminal = event),
      }));
    } catch (err) {
      replies.delete(conv.id);
      throw err;
    }
    live.handle = handle;
    // Synchronously after start: the provider is asked on a later microtask, so these come first.
    const before = log.lastId;
    if (message) log.append({ type: 'user', text: message.content });
    log.append({ type: 'status', status: 'running' });
    const userStored = message ? s.append(conv.id, { role: 'user', content: message.content, images: message.images }) : Promise.resolve(true);
    void handle.done.then(() => finish(s, conv.id, live, log, userStored, () => terminal));
    try {
      await userStored;
    } catch (err) {
      handle.abort(new CancelReason(err instanceof Error ? err.message : 'The message could not be kept.'));
      if (err instanceof ConversationTooLargeError) throw tooLarge(err);
      throw err;
    }
    changed('changed', conv.id);
    logger.info(`conversations: ${conv.id.slice(0, 8)} replying with ${provider.id}`);
    // Following with this Last-Event-ID shows the turn from the user's message on.
    return before;
  }

  /** The reply ended: kept in the conversation (a failure with what the client was told), then announced. */
  async function finish(s: ConversationStore, id: string, live: LiveReply, log: JsonEventLog<ConversationEvent>, userStored: Promise<boolean>, ending: () => TerminalEvent | undefined): Promise<void> {
    const end = ending();
    const ok = end?.type === 'done';
    try {
      if (await userStored.catch(() => false)) {
        await s.append(id, ok ? { role: 'assistant', content: end.content } : { role: 'assistant', content: live.text, error: end?.type === 'error' ? end.message : 'The reply ended.' });
      }
    } catch (err) {
      logger.error(`conversations: the reply of ${id.slice(0, 8)} could not be kept (${err instanceof Error ? err.name : 'error'})`);
    }
    if (replies.get(id) === live) replies.delete(id);
    if (!ok) log.append({ type: 'error', message: end?.type === 'error' ? end.message : 'The reply ended.' });
    log.append({ type: 'status', status: ok ? 'idle' : live.stopped ? 'stopped' : 'failed' });
    if (s.get(id)) changed('changed', id);
  }

  const stop = route('POST', STOP, async (req, res) => {
    const { c } = await find(req);
    const live = replies.get(c.id);
    if (live?.handle) {
      live.stopped = true;
      live.handle.abort(new CancelReason(STOPPED_BY_CLIENT));
    }
    sendNoContent(res);
  });

  return {
    // POST of an event stream: the same stream for quick tunnels, which hold a GET event stream until it closes (as the agent's).
    routes: [create, list, feed('GET'), feed('POST'), get, update, remove, exportMarkdown, events('GET'), events('POST'), postMessage, reply, stop],
    stop() {
      for (const log of logs.values()) log.closeAll();
      changes.closeAll();
    },
  };
};

/** A whole history as a chat request carries it, user and assistant turns only (`messages` of a PUT). */
function historyOf(value: unknown, shape: string): { role: 'user' | 'assistant'; content: string; images?: ChatMessage['images'] }[] {
  if (!Array.isArray(value)) throw invalid(`"messages" must be an array: ${shape}.`);
  if (value.length === 0) return [];
  const parsed = parseChatRequest({ messages: value });
  return parsed.map((m, i) => {
    if (m.role !== 'user' && m.role !== 'assistant') throw invalid(`messages[${i}].role must be "user" or "assistant"; the system prompt is "system": ${shape}.`);
    return { role: m.role, content: m.content, ...(m.images ? { images: m.images } : {}) };
  });
}

/** The user's message as a chat request's, its refusals naming `content` (not `messages[0].content`). */
function parseUserMessage(content: unknown): ChatMessage {
  try {
    return parseChatRequest({ messages: [{ role: 'user', content }] })[0]!;
  } catch (err) {
    if (err instanceof ChatError) throw new ChatError(err.code, err.message.replaceAll('messages[0].', ''));
    throw err;
  }
}
