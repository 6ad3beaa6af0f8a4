/**
 * The saved chats: kept in the chat store, listed in the drawer (open, rename, delete with Undo,
 * delete all), "Keep chats on this phone", and New chat.
 */
import { app, KEEP_CHATS_KEY } from './app';
import type { ChatListActions, Place } from './chatlist';
import { IdbStore, MemoryStore, newChat, QuotaError, type Chat, type ChatStore } from './chats';
import { newKey } from './api';
import { runTurn, showChat } from './conversation';
import { desktopChat, DesktopStore, desktopKeepsChats, followChanges, keepOwn, onDesktop } from './desktopChats';
import { ui } from './dom';
import { chatMarkdown, shareMarkdown } from './export';
import { clearPending } from './pending';
import { localStore } from './storage';
import { closeLayer, isOpen, openLayer } from './ui/layer';
import { showToast } from './ui/toast';

function storeFailed(err: unknown): void {
  ui.storeError.textContent = err instanceof QuotaError ? err.message : `This chat could not be saved on the phone: ${err instanceof Error ? err.message : String(err)}`;
}

/** Saves a chat that has messages (an empty new chat is not worth a row), then the list. */
export async function save(c: Chat): Promise<void> {
  if (c.messages.length) {
    c.updated = Date.now();
    try {
      await app.store.put(c);
      ui.storeError.textContent = '';
    } catch (err) {
      storeFailed(err);
    }
  }
  await refreshList();
}

/**
 * The chat just opened, as the desktop has it now: the list's copy can be older (a reply that
 * ended, or went on, since the list was read), and a reply the desktop is writing in it (started
 * on another phone or at the desk) is shown live.
 */
async function openFromDesktop(token: string, opened: Chat): Promise<void> {
  const now = await desktopChat(token, opened.id);
  // Left, or something started here meanwhile: what the user did since wins.
  if (!now || app.current || app.editing !== null || app.chat !== opened) return;
  if (now.running || now.chat.updated !== opened.updated || now.chat.messages.length !== opened.messages.length) showChat(keepOwn(now.chat, opened));
  if (now.running) runTurn(app.chat, { key: newKey(), chatId: opened.id, body: '', lastId: now.running.lastEventId, raw: now.running.text }, opened.id);
}

export async function refreshList(): Promise<void> {
  try {
    app.chats = await app.store.list();
  } catch (err) {
    storeFailed(err);
  }
  drawList();
}

// The drawer's list is not on screen at first paint: its code comes just after (a chunk of its own).
let chatListModule: Promise<typeof import('./chatlist')> | undefined;
const chatList = () =>
  (chatListModule ??= import('./chatlist').catch((err: unknown) => {
    chatListModule = undefined;
    throw err;
  }));

/** The list as it is now (a search typed, the chats read again). */
function drawList(): void {
  const placeOf = app.store instanceof DesktopStore ? (c: Chat): Place => (onDesktop(c.id) ? 'desktop' : 'phone') : undefined;
  const chats = app.chats;
  const current = app.chat.messages.length ? app.chat.id : null;
  void chatList().then((m) => m.renderChatList(chats, current, listActions, placeOf), () => undefined);
}

/** This chat's own instructions, in a sheet of their own (the chat's menu, or the new chat's screen). */
export function openSystemPrompt(opener: HTMLElement | null): void {
  openLayer(ui.systemSheet, opener);
  ui.systemPrompt.focus();
}

export function startNewChat(): void {
  if (app.current) return;
  showChat(newChat());
  void refreshList();
}

/** Back into the store, as it was (Undo after a delete). */
async function restore(c: Chat): Promise<void> {
  try {
    await app.store.put(c);
  } catch (err) {
    storeFailed(err);
  }
  await refreshList();
}

export const listActions: ChatListActions = {
  open(id) {
    if (app.current) return;
    const found = app.chats.find((c) => c.id === id);
    if (found) showChat(structuredClone(found));
    showHistory(false);
    void refreshList();
    if (found && app.store instanceof DesktopStore && app.pairing) void openFromDesktop(app.pairing.token, app.chat);
  },
  rename(id, title) {
    const target = id === app.chat.id ? app.chat : app.chats.find((c) => c.id === id);
    if (!target) return;
    target.title = title;
    if (target === app.chat) ui.chatHeading.textContent = title || 'New chat';
    void save(target);
  },
  export(id) {
    const target = id === app.chat.id ? app.chat : app.chats.find((c) => c.id === id);
    if (!target) return;
    void chatMarkdown(target, app.store)
      .then((md) => shareMarkdown(md, target.title || 'New chat'))
      .catch((err: unknown) => showToast(`Could not export “${target.title || 'New chat'}”: ${err instanceof Error ? err.message : String(err)}`));
  },
  remove(id) {
    if (app.current && id === app.chat.id) return;
    const gone = id === app.chat.id ? structuredClone(app.chat) : app.chats.find((c) => c.id === id);
    void app.store
      .remove(id)
      .catch(storeFailed)
      .then(() => {
        // Deleting the open chat opens a new one.
        if (id === app.chat.id) showChat(newChat());
        if (gone) showToast(`Deleted “${gone.title || 'New chat'}”`, () => void restore(gone));
        return refreshList();
      });
  },
  system(id) {
    if (app.current && id !== app.chat.id) return;
    if (id !== app.chat.id) listActions.open(id);
    else showHistory(false);
    openSystemPrompt(null);
  },
  moveToDesktop() {
    const desktop = app.store instanceof DesktopStore ? app.store : undefined;
    if (!desktop) return;
    // Written there one by one (each takes the desktop's id); one that cannot go stays here.
    void (async () => {
      for (const c of app.chats.filter((x) => !onDesktop(x.id))) {
        const chat = c.id === app.chat.id ? app.chat : structuredClone(c);
        await desktop.put(chat).catch(storeFailed);
      }
      await refreshList();
      const left = app.chats.filter((x) => !onDesktop(x.id)).length;
      showToast(left ? `${left} chat${left === 1 ? '' : 's'} could not be moved: the desktop is not reachable.` : 'Moved to the desktop.');
    })();
  },
  removeAll() {
    if (app.current) return;
    void app.store
      .clear()
      .catch(storeFailed)
      .then(() => {
        showChat(newChat());
        return refreshList();
      });
  },
};

/** The chats drawer, sliding over from the left. */
export function showHistory(on: boolean): void {
  if (on) {
    openLayer(ui.history, ui.chatsOpen);
    void refreshList();
  } else if (isOpen(ui.history)) closeLayer();
}

/** "Keep chats on this phone": off deletes the database and keeps chats in memory from then on. */
export async function setKeepChats(keep: boolean): Promise<void> {
  // With the desktop keeping chats, this setting is about this phone's copy (the cache) only.
  const desktop = app.store instanceof DesktopStore ? app.store : undefined;
  const before = desktop?.cache ?? app.store;
  const kept = await before.list().catch(() => [] as Chat[]);
  let local: ChatStore;
  if (keep) {
    localStore.remove(KEEP_CHATS_KEY);
    local = new IdbStore();
  } else {
    localStore.write(KEEP_CHATS_KEY, false);
    // The reply kept for a reopened page holds the conversation: it goes with the chats.
    clearPending();
    local = new MemoryStore();
  }
  // Swapped before the old database goes, so nothing that saves meanwhile reaches (and re-creates) it.
  app.store = desktop ? new DesktopStore(desktop.token, local) : local;
  if (!keep && before instanceof IdbStore) await before.destroy();
  // The chats of this visit stay on screen and in the list (in memory when not kept).
  try {
    for (const c of kept) await local.put(c);
    if (app.chat.messages.length) await local.put(app.chat);
    ui.storeError.textContent = '';
  } catch (err) {
    storeFailed(err);
  }
  await refreshList();
}

/** Whether the desktop keeps conversations (one check per connection, none once its chats are in use). */
export async function desktopKeeps(token: string): Promise<boolean> {
  if (app.store instanceof DesktopStore && app.store.token === token) return true;
  return desktopKeepsChats(token);
}

/**
 * After connecting: when the desktop keeps conversations (issue 30), the list comes from it and
 * this phone's store becomes its cache; otherwise nothing changes. Synchronous up to the list's
 * read, so a message sent from then on goes to the desktop's conversation.
 */
export function useDesktopChats(token: string, keeps: boolean): void {
  if (!keeps || (app.store instanceof DesktopStore && app.store.token === token)) return;
  const local = app.store instanceof DesktopStore ? app.store.cache : app.store;
  app.store = new DesktopStore(token, local);
  ui.historyKept.hidden = false;
  ui.chatsWhere.textContent = `New chats are kept on the desktop${app.info?.hostname ? ` (${app.info.hostname})` : ''}: every phone paired with it sees them. This phone keeps a copy to read offline.`;
  stopFollowing?.();
  let queued: ReturnType<typeof setTimeout> | undefined;
  // A burst of changes (a reply ending, a rename) reads the list once.
  stopFollowing = followChanges(token, () => {
    clearTimeout(queued);
    queued = setTimeout(() => void refreshList(), 150);
  });
  void refreshList();
}

let stopFollowing: (() => void) | undefined;

export function initLibrary(): void {
  ui.chatsOpen.addEventListener('click', () => showHistory(!isOpen(ui.history)));
  ui.historyNew.addEventListener('click', () => {
    startNewChat();
    showHistory(false);
  });
  ui.historyClose.addEventListener('click', () => showHistory(false));
  ui.deleteAll.addEventListener('click', () => void chatList().then((m) => m.deleteAllClicked(listActions), () => undefined));
  ui.keepChats.addEventListener('change', () => void setKeepChats(ui.keepChats.checked));
  ui.chatSearch.addEventListener('input', drawList);
  ui.systemOpen.addEventListener('click', () => openSystemPrompt(ui.systemOpen));
  ui.systemClose.addEventListener('click', closeLayer);
}
