/**
 * DeskRelay phone web client: served by the relay itself, so every API call is same-origin.
 * This module wires the screens (pairing, connection, chats) to the other modules.
 */
import { ApiError, AUTH_MESSAGE, fetchInfo } from './api';
import { copyButton } from './code';
import { deleteAllClicked, renderChatList, type ChatListActions } from './chatlist';
import { IdbStore, MemoryStore, newChat, QuotaError, titleFrom, type Chat, type ChatStore } from './chats';
import { el, ui } from './dom';
import { registerServiceWorker } from './install';
import { loadPairing, parsePairing, readFragment, remembered, savePairing, TOKEN_RE, type Pairing } from './pairing';
import { assistantMessage, followScroll, markFinished, renderReply, setStatus, userMessage, withoutThinking, type AssistantView, type MessageView } from './render';
import { initPhotos, MAX_PHOTOS, MAX_REQUEST_BYTES, MAX_REQUEST_PHOTO_BYTES, pending, sentBytes, setPending, type Photo } from './photos';
import { hideProviders, initProviders, loadProviders } from './providers';
import { clearPending, readPending, writePending, type PendingTurn } from './pending';
import { PUSH_UNAVAILABLE, pushSupport, pushWanted, renewPush, turnPushOff, turnPushOn } from './push';
import { localStore } from './storage';
import { Turn, type WireMessage } from './turn';

const KEEP_CHATS_KEY = 'deskrelay.keepChats';

let pairing: Pairing | null = null;
/** The turn being streamed (at most one). */
let current: Turn | null = null;
/** Where chats are kept: IndexedDB, or memory with "Keep chats on this phone" off. */
let store: ChatStore = localStore.read(KEEP_CHATS_KEY) === false ? new MemoryStore() : new IdbStore();
/** The chat on screen. */
let chat: Chat = newChat();
let chats: Chat[] = [];
/** The index of the sent message being edited, if any: Send then resends the chat from there. */
let editing: number | null = null;

// ---------------------------------------------------------------------------------------------
// Chats

/**
 * What the provider gets: the chat's system prompt first, then the messages without reasoning.
 * Photos go as image parts, the newest first while the relay's limits allow (8 and ~10 MiB per
 * request); older ones are left out.
 */
function history(c: Chat): WireMessage[] {
  let count = 0;
  let bytes = 0;
  const messages = c.messages
    .slice()
    .reverse()
    .map((m): WireMessage => {
      if (m.role === 'assistant') return { role: m.role, content: withoutThinking(m.content) };
      const images = (m.images ?? []).filter((p) => {
        if (count >= MAX_PHOTOS || bytes + sentBytes(p) > MAX_REQUEST_PHOTO_BYTES) return false;
        count += 1;
        bytes += sentBytes(p);
        return true;
      });
      if (!m.images?.length) return { role: m.role, content: m.content };
      return { role: m.role, content: [{ type: 'text', text: m.content || (images.length ? '' : '(a photo)') }, ...images.map((p) => ({ type: 'image' as const, ...p }))] };
    })
    .reverse();
  const system = c.systemPrompt.trim();
  return system ? [{ role: 'system', content: system }, ...messages] : messages;
}

/**
 * Why the request for this new message would be refused for its size (the relay takes 1 MiB, or
 * 10 MiB when it carries photos), counted as it will be sent; '' when it fits. Said before Send.
 */
function requestTooLarge(text: string, images: Photo[]): string {
  const upTo = editing !== null ? chat.messages.slice(0, editing) : chat.messages;
  const trial: Chat = { ...chat, systemPrompt: ui.systemPrompt.value, messages: [...upTo, images.length ? { role: 'user', content: text, images } : { role: 'user', content: text }] };
  const messages = history(trial);
  const size = new TextEncoder().encode(JSON.stringify({ messages })).length;
  const photos = messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image'));
  const limit = photos ? MAX_REQUEST_BYTES : MAX_TEXT_REQUEST_BYTES;
  if (size <= limit) return '';
  const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
  return `This message is too large to send: ${mb(size)} MB of the ${mb(limit)} MB the desktop takes${photos ? '. Remove a photo, then send it.' : '. Shorten it or start a new chat.'}`;
}

/** The relay's limit for a request without photos (server/src/http/body.ts MAX_BODY_BYTES). */
const MAX_TEXT_REQUEST_BYTES = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// A message's own buttons

function button(label: string, className: string, run: () => void, accessibleName = label): HTMLButtonElement {
  const b = el('button', className, label);
  b.type = 'button';
  b.setAttribute('aria-label', accessibleName);
  b.addEventListener('click', run);
  return b;
}

function userActions(view: MessageView, text: string, index: number): void {
  view.actions.append(copyButton('Copy', 'copy-msg', () => text, 'Copy message'), button('Edit', 'edit-msg', () => beginEdit(index), 'Edit message'));
}

function assistantActions(view: AssistantView, raw: string): void {
  view.actions.replaceChildren(copyButton('Copy', 'copy-msg', () => withoutThinking(raw), 'Copy reply'));
}

/** "Regenerate" sits on the last reply, when the chat ends with one and nothing streams. */
function updateRegenerate(): void {
  for (const b of ui.log.querySelectorAll(':scope > li > .msg-actions > .regen')) b.remove();
  if (current || chat.messages.at(-1)?.role !== 'assistant') return;
  const li = [...ui.log.children].reverse().find((item) => item.classList.contains('assistant'));
  li?.querySelector(':scope > .msg-actions')?.append(
    button('Regenerate', 'regen', () => {
      if (current || chat.messages.at(-1)?.role !== 'assistant') return;
      chat.messages.pop();
      li.remove();
      void save(chat);
      runTurn(chat);
    }, 'Regenerate reply'),
  );
}

function beginEdit(index: number): void {
  if (current || !chat.messages[index]) return;
  editing = index;
  ui.message.value = chat.messages[index].content;
  setPending(chat.messages[index].images ?? []);
  ui.editing.hidden = false;
  ui.message.focus();
}

function endEdit(): void {
  editing = null;
  ui.editing.hidden = true;
}

function storeFailed(err: unknown): void {
  ui.storeError.textContent = err instanceof QuotaError ? err.message : `This chat could not be saved on the phone: ${err instanceof Error ? err.message : String(err)}`;
}

/** Saves a chat that has messages (an empty new chat is not worth a row), then the list. */
async function save(c: Chat): Promise<void> {
  if (c.messages.length) {
    c.updated = Date.now();
    try {
      await store.put(c);
      ui.storeError.textContent = '';
    } catch (err) {
      storeFailed(err);
    }
  }
  await refreshList();
}

async function refreshList(): Promise<void> {
  try {
    chats = await store.list();
  } catch (err) {
    storeFailed(err);
  }
  renderChatList(chats, chat.messages.length ? chat.id : null, listActions);
}

/** Puts a chat on screen: its messages as they were, replies re-rendered through the sanitiser. */
function showChat(c: Chat): void {
  chat = c;
  endEdit();
  ui.log.replaceChildren();
  ui.systemPrompt.value = c.systemPrompt;
  ui.system.classList.toggle('set', !!c.systemPrompt.trim());
  setStatus('');
  c.messages.forEach((m, i) => {
    if (m.role === 'user') userActions(userMessage(m.content, m.images), m.content, i);
    else {
      const view = assistantMessage();
      renderReply(view, m.content);
      markFinished(view);
      assistantActions(view, m.content);
    }
  });
  updateRegenerate();
  followScroll(true);
}

function startNewChat(): void {
  if (current) return;
  showChat(newChat());
  void refreshList();
}

const listActions: ChatListActions = {
  open(id) {
    if (current) return;
    const found = chats.find((c) => c.id === id);
    if (found) showChat(structuredClone(found));
    showHistory(false);
    void refreshList();
  },
  rename(id, title) {
    const target = id === chat.id ? chat : chats.find((c) => c.id === id);
    if (!target) return;
    target.title = title;
    void save(target);
  },
  remove(id) {
    if (current && id === chat.id) return;
    void store
      .remove(id)
      .catch(storeFailed)
      .then(() => {
        if (id === chat.id) showChat(newChat());
        return refreshList();
      });
  },
  removeAll() {
    if (current) return;
    void store
      .clear()
      .catch(storeFailed)
      .then(() => {
        showChat(newChat());
        return refreshList();
      });
  },
};

function showHistory(on: boolean): void {
  ui.history.hidden = !on;
  ui.chatsOpen.setAttribute('aria-expanded', String(on));
  if (on) void refreshList();
}

/** "Keep chats on this phone": off deletes the database and keeps chats in memory from then on. */
async function setKeepChats(keep: boolean): Promise<void> {
  const before = store;
  const kept = await before.list().catch(() => [] as Chat[]);
  if (keep) {
    localStore.remove(KEEP_CHATS_KEY);
    store = new IdbStore();
  } else {
    localStore.write(KEEP_CHATS_KEY, false);
    // The reply kept for a reopened page holds the conversation: it goes with the chats.
    clearPending();
    store = new MemoryStore();
    if (before instanceof IdbStore) await before.destroy();
  }
  // The chats of this visit stay on screen and in the list (in memory when not kept).
  try {
    for (const c of kept) await store.put(c);
    if (chat.messages.length) await store.put(chat);
    ui.storeError.textContent = '';
  } catch (err) {
    storeFailed(err);
  }
  await refreshList();
}

// ---------------------------------------------------------------------------------------------
// Turns

function startTurn(text: string, images: Photo[] = []): void {
  if (!pairing) return;
  const c = chat;
  if (!c.messages.length && !c.title) c.title = text ? titleFrom(text) : 'Photo';
  c.messages.push(images.length ? { role: 'user', content: text, images } : { role: 'user', content: text });
  void save(c);
  userActions(userMessage(text, images), text, c.messages.length - 1);
  runTurn(c);
}

/** Streams the reply to the chat as it stands (a new message, a regenerate, an edit), or resumes one from before a reload. */
function runTurn(c: Chat, resume?: PendingTurn): void {
  if (!pairing) return;
  followScroll(true);
  let keptAt = 0;
  const keep = (turn: Turn) => {
    keptAt = Date.now();
    if (store.persistent) writePending({ key: turn.key, chatId: c.id, body: turn.body, lastId: turn.lastId, raw: turn.raw });
  };
  current = new Turn(pairing.token, history(c), {
    finished(turn) {
      // A reply the phone could not reach stays kept: the next page load tries it again.
      if (turn.failure?.code === 'network') keep(turn);
      else clearPending(turn.key);
      if (turn.state === 'done' || (turn.state === 'stopped' && withoutThinking(turn.raw))) {
        c.messages.push({ role: 'assistant', content: turn.raw });
        assistantActions(turn.view, turn.raw);
        void save(c);
      }
      if (current === turn) current = null;
      if (c === chat) updateRegenerate();
    },
    unauthorized: onUnauthorized,
    retry,
    progress(turn) {
      // At most twice a second: enough to lose little on a reload, little work per token.
      if (Date.now() - keptAt >= 500) keep(turn);
    },
  }, resume);
  // Always kept (not only with push on): a reload or a tab iOS discarded resumes it.
  keep(current);
  current.start();
}

/** A page opened after the one that streamed a reply was gone (a reload, a discarded tab, the push notification): that reply resumes. */
function resumePending(): void {
  const pending = readPending();
  if (!pending || current || !pairing) return;
  const found = chats.find((c) => c.id === pending.chatId);
  if (!found || found.messages.at(-1)?.role !== 'user') return clearPending();
  showChat(structuredClone(found));
  runTurn(chat, pending);
}

/** Resend the same request as a new turn (after a failure that could not be resumed). */
function retry(turn: Turn): void {
  if (current) return;
  turn.view.li.remove();
  const last = chat.messages.at(-1);
  if (!last || last.role !== 'user') return;
  chat.messages.pop();
  const prev = ui.log.lastElementChild;
  if (prev && prev.classList.contains('user')) prev.remove();
  startTurn(last.content, last.images);
}

function stop(): void {
  current?.stop();
}

function maybeResume(): void {
  current?.maybeResume();
}

// ---------------------------------------------------------------------------------------------
// Push notifications (the bell)

function pushNote(text: string): void {
  ui.pushNote.textContent = text;
  ui.pushNote.hidden = !text;
}

function showBell(): void {
  const support = pushSupport();
  const on = support === 'ok' && pushWanted() && Notification.permission === 'granted';
  ui.pushBell.hidden = false;
  ui.pushBell.classList.toggle('unavailable', support !== 'ok');
  ui.pushBell.setAttribute('aria-pressed', String(on));
  const label = support !== 'ok' ? 'Notifications are not available here' : on ? 'Notifications on: tap to turn off' : 'Notify me when a reply is ready';
  ui.pushBell.setAttribute('aria-label', label);
  ui.pushBell.title = label;
}

/** The bell: the user's own tap is what asks the browser for permission. */
async function bellTapped(): Promise<void> {
  const support = pushSupport();
  if (support !== 'ok') return pushNote(PUSH_UNAVAILABLE[support]);
  ui.pushBell.disabled = true;
  try {
    if (ui.pushBell.getAttribute('aria-pressed') === 'true') {
      await turnPushOff(pairing?.token ?? null);
      pushNote('Notifications are off.');
    } else {
      if (!pairing) return;
      await turnPushOn(pairing.token);
      pushNote('You will be notified when a reply finishes while DeskRelay is in the background.');
    }
  } catch (err) {
    pushNote(err instanceof Error ? err.message : String(err));
  } finally {
    ui.pushBell.disabled = false;
    showBell();
  }
}

/** Each connection: the desktop's subscriptions belong to its token, so ours is posted again (no prompt). */
function renewPushAfterConnect(token: string): void {
  showBell();
  void renewPush(token).then(
    () => showBell(),
    (err: unknown) => pushNote(err instanceof Error ? `Notifications: ${err.message}` : String(err)),
  );
}

// ---------------------------------------------------------------------------------------------
// Screens

function onUnauthorized(): void {
  ui.infoWarning.textContent = AUTH_MESSAGE;
  ui.infoWarning.hidden = false;
  ui.conn.textContent = 'Not connected';
}

function showPairing(message = ''): void {
  ui.pair.hidden = false;
  ui.info.hidden = true;
  ui.chat.hidden = true;
  ui.unpair.hidden = true;
  ui.chatsOpen.hidden = true;
  ui.pushBell.hidden = true;
  hideProviders();
  pushNote('');
  showHistory(false);
  ui.conn.textContent = 'Not paired';
  ui.pairError.textContent = message;
}

function showChatScreen(): void {
  ui.chat.hidden = false;
  ui.chatsOpen.hidden = false;
}

async function connect(): Promise<boolean> {
  if (!pairing) return false;
  ui.pair.hidden = true;
  ui.info.hidden = false;
  ui.unpair.hidden = false;
  ui.infoWarning.hidden = true;
  ui.remember.checked = remembered();
  ui.conn.textContent = 'Connecting…';
  ui.testConn.disabled = true;
  try {
    const info = await fetchInfo(pairing.token);
    ui.infoHost.textContent = String(info.hostname ?? '');
    ui.infoVersion.textContent = String(info.version ?? '');
    ui.conn.textContent = `${info.hostname} · v${info.version}`;
    if (info.providerConfigured === false) {
      ui.infoWarning.textContent = 'The desktop has no usable provider selected: switch to a local provider on the desktop before chatting.';
      ui.infoWarning.hidden = false;
    }
    showChatScreen();
    void loadProviders(pairing.token);
    renewPushAfterConnect(pairing.token);
    return true;
  } catch (err) {
    const message = err instanceof Error ? err.message : 'Could not connect.';
    if (err instanceof ApiError && (err.status === 401 || err.code === 'wrong_service')) {
      pairing = null;
      savePairing(null);
      showPairing(message);
    } else {
      ui.infoWarning.textContent = message;
      ui.infoWarning.hidden = false;
      ui.conn.textContent = err instanceof ApiError && err.code === 'network' ? 'Desktop unreachable' : 'Not connected';
      showChatScreen();
    }
    return false;
  } finally {
    ui.testConn.disabled = false;
  }
}

function pairWith(p: Pairing, remember = false): void {
  pairing = p;
  savePairing(p, remember);
}

/** "Forget this desktop" (and "Pair again"): the pairing goes from this tab and this phone; chats stay. */
function forgetDesktop(): void {
  stop();
  clearPending();
  pairing = null;
  savePairing(null);
  showChat(newChat());
  showPairing();
}

function init(): void {
  const fragmentToken = readFragment();
  if (fragmentToken) {
    if (TOKEN_RE.test(fragmentToken)) pairWith({ url: location.origin, token: fragmentToken }, remembered());
    else showPairing('The link did not carry a valid token. Paste the pairing JSON instead.');
  } else {
    pairing = loadPairing();
  }
  ui.keepChats.checked = store.persistent;
  initProviders();
  initPhotos();

  ui.pairForm.addEventListener('submit', (e) => {
    e.preventDefault();
    try {
      const p = parsePairing(ui.pairJson.value);
      ui.pairJson.value = '';
      // The page always talks to the relay that served it (CSP: connect-src 'self').
      pairWith({ url: location.origin, token: p.token }, ui.pairRemember.checked);
      ui.pairError.textContent = '';
      void connect().then((ok) => {
        if (ok && p.url !== location.origin && ui.infoWarning.hidden) {
          ui.infoWarning.textContent = `The pairing URL (${p.url}) is not this page's address; this page talks to ${location.origin}.`;
          ui.infoWarning.hidden = false;
        }
      });
    } catch (err) {
      ui.pairError.textContent = err instanceof Error ? err.message : String(err);
      ui.pairJson.focus();
    }
  });
  ui.testConn.addEventListener('click', () => void connect());
  ui.unpair.addEventListener('click', forgetDesktop);
  ui.forget.addEventListener('click', forgetDesktop);
  ui.remember.addEventListener('change', () => {
    if (pairing) savePairing(pairing, ui.remember.checked);
  });
  ui.keepChats.addEventListener('change', () => void setKeepChats(ui.keepChats.checked));
  ui.chatsOpen.addEventListener('click', () => showHistory(ui.history.hidden));
  ui.historyNew.addEventListener('click', () => {
    startNewChat();
    showHistory(false);
  });
  ui.deleteAll.addEventListener('click', () => deleteAllClicked(listActions));
  ui.compose.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = ui.message.value.trim();
    const images = [...pending];
    if ((!text && !images.length) || current || !pairing) return;
    const tooLarge = requestTooLarge(text, images);
    if (tooLarge) {
      ui.attachError.textContent = tooLarge;
      return;
    }
    ui.message.value = '';
    setPending([]);
    chat.systemPrompt = ui.systemPrompt.value;
    if (editing !== null) {
      // Resend from the edited message: what followed it goes.
      chat.messages = chat.messages.slice(0, editing);
      showChat(chat);
    }
    startTurn(text, images);
  });
  ui.editCancel.addEventListener('click', () => {
    endEdit();
    ui.message.value = '';
    setPending([]);
  });
  // Enter sends on a desktop browser (Shift+Enter: a new line); on a phone it is a new line and
  // the Send button sends. Ctrl/Cmd+Enter sends everywhere.
  const phoneKeyboard = () => matchMedia('(pointer: coarse)').matches;
  ui.message.enterKeyHint = phoneKeyboard() ? 'enter' : 'send';
  ui.message.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.isComposing) return;
    if (e.ctrlKey || e.metaKey || (!phoneKeyboard() && !e.shiftKey && !e.altKey)) {
      e.preventDefault();
      ui.compose.requestSubmit();
    }
  });
  let systemTimer: ReturnType<typeof setTimeout> | undefined;
  const saveSystem = () => {
    clearTimeout(systemTimer);
    if (chat.systemPrompt === ui.systemPrompt.value) return;
    chat.systemPrompt = ui.systemPrompt.value;
    ui.system.classList.toggle('set', !!chat.systemPrompt.trim());
    void save(chat);
  };
  ui.systemPrompt.addEventListener('input', () => {
    clearTimeout(systemTimer);
    systemTimer = setTimeout(saveSystem, 400);
  });
  ui.systemPrompt.addEventListener('change', saveSystem);
  ui.stop.addEventListener('click', stop);
  ui.pushBell.addEventListener('click', () => void bellTapped());
  // The notification was opened while this page was still there: back to the reply, resumed.
  navigator.serviceWorker?.addEventListener('message', (e: MessageEvent) => {
    const data = e.data as { type?: unknown } | null;
    if (data?.type === 'reply_ready') maybeResume();
  });
  ui.newChat.addEventListener('click', startNewChat);
  document.addEventListener('visibilitychange', maybeResume);
  window.addEventListener('online', maybeResume);
  window.addEventListener('pageshow', maybeResume);
  window.addEventListener('focus', maybeResume);
  // Back online: say so at once rather than at the next message.
  window.addEventListener('online', () => {
    if (pairing && !current && ui.conn.textContent === 'Desktop unreachable') void connect();
  });

  // The pairing link opened again while the page is open (a rotated token): only the fragment
  // changes, so the page is not reloaded; take the token (and take it out of the address bar).
  window.addEventListener('hashchange', () => {
    const token = readFragment();
    if (!token) return;
    if (!TOKEN_RE.test(token)) return showPairing('The link did not carry a valid token. Paste the pairing JSON instead.');
    stop();
    pairWith({ url: location.origin, token }, remembered());
    void connect();
  });

  if (pairing) void connect();
  else if (!fragmentToken) showPairing();
  // The most recent chat comes back on screen (unless a message was sent meanwhile).
  void refreshList().then(() => {
    resumePending();
    if (chats[0] && !chat.messages.length && !current) showChat(structuredClone(chats[0]));
  });
  registerServiceWorker();
}

init();
