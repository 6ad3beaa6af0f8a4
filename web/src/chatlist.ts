/**
 * The saved chats' list: grouped Today / Yesterday / Earlier (and, with the desktop keeping chats,
 * "On the desktop" / "Only on this phone"), found by a search box; each row opens its chat, and
 * one menu renames, sets the chat's system prompt, exports as Markdown (the share sheet) or
 * deletes; delete all (a second tap confirms).
 * Titles are user text (or the first message): only ever set as textContent.
 */
import type { Chat } from './chats';
import { el, ui } from './dom';
import { icon } from './ui/icons';

export interface ChatListActions {
  open(id: string): void;
  rename(id: string, title: string): void;
  export(id: string): void;
  remove(id: string): void;
  removeAll(): void;
  /** Opens the chat and its own system prompt. */
  system(id: string): void;
  /** Moves this phone's own chats to the desktop (with the desktop keeping chats). */
  moveToDesktop(): void;
}

/** Where a chat is kept, when the desktop keeps chats (undefined: this phone only, no grouping). */
export type Place = 'desktop' | 'phone';

const dayStart = (t: number) => new Date(new Date(t).toDateString()).getTime();

/** "14:05" today, "Yesterday 14:05", else the date. */
function when(t: number, now = Date.now()): string {
  const time = new Date(t).toLocaleTimeString(undefined, { timeStyle: 'short' });
  const days = Math.round((dayStart(now) - dayStart(t)) / 86_400_000);
  if (days <= 0) return time;
  if (days === 1) return `Yesterday ${time}`;
  return new Date(t).toLocaleDateString(undefined, { dateStyle: 'medium' });
}

function dayGroup(t: number, now = Date.now()): string {
  const days = Math.round((dayStart(now) - dayStart(t)) / 86_400_000);
  return days <= 0 ? 'Today' : days === 1 ? 'Yesterday' : 'Earlier';
}

function matches(chat: Chat, query: string): boolean {
  if (!query) return true;
  const q = query.toLowerCase();
  return (chat.title || 'New chat').toLowerCase().includes(q) || chat.messages.some((m) => m.content.toLowerCase().includes(q));
}

/**
 * The chat being renamed and what the user has typed so far. The list is drawn anew whenever the
 * chats change (a reply ending, another phone's change through the desktop's feed), and that must
 * not take a half-typed title away.
 */
let renaming: { id: string; draft: string; focused: boolean; selection: [number, number] } | undefined;
/** The chat whose menu is open, kept open across a redraw. */
let menuFor: string | undefined;

function heading(level: 'h3' | 'h4', text: string): HTMLLIElement {
  const li = el('li', `chat-group-label ${level}`);
  li.append(el(level, '', text));
  return li;
}

function closeMenus(except?: HTMLElement): void {
  for (const m of ui.chatList.querySelectorAll<HTMLElement>('.chat-menu')) {
    if (m === except) continue;
    m.hidden = true;
    m.previousElementSibling?.setAttribute('aria-expanded', 'false');
  }
  if (!except) menuFor = undefined;
}

function row(chat: Chat, currentId: string | null, actions: ChatListActions): HTMLLIElement {
  const name = chat.title || 'New chat';
  const li = el('li', chat.id === currentId ? 'chat-item current' : 'chat-item');
  const open = el('button', 'chat-open');
  open.type = 'button';
  open.append(el('span', 'chat-title', name), el('span', 'chat-when', when(chat.updated)));
  if (chat.id === currentId) open.setAttribute('aria-current', 'true');
  open.addEventListener('click', () => actions.open(chat.id));
  // One menu per row instead of three icons always on show.
  const more = el('button', 'icon chat-more');
  more.type = 'button';
  more.setAttribute('aria-label', `More for “${name}”`);
  more.setAttribute('aria-haspopup', 'menu');
  more.setAttribute('aria-expanded', 'false');
  more.title = 'More';
  const dots = icon('plus');
  dots.firstElementChild!.setAttribute('d', 'M5 12h.01M12 12h.01M19 12h.01');
  dots.classList.add('dots');
  more.append(dots);
  const menu = el('div', 'chat-menu');
  menu.setAttribute('role', 'menu');
  menu.hidden = true;
  const item = (text: string, label: string, className: string, run: () => void) => {
    const b = el('button', `chat-menu-item ${className}`, text);
    b.type = 'button';
    b.setAttribute('role', 'menuitem');
    b.setAttribute('aria-label', label);
    b.addEventListener('click', () => {
      closeMenus();
      run();
    });
    return b;
  };
  menu.append(
    item('Rename', `Rename “${name}”`, 'chat-rename', () => startRename(li, chat, actions)),
    item('System prompt', `System prompt of “${name}”`, 'chat-system', () => actions.system(chat.id)),
    item('Export', `Export “${name}” as Markdown`, 'chat-export', () => actions.export(chat.id)),
    // Undo is offered after a delete (a toast), so it needs no second tap.
    item('Delete', `Delete “${name}”`, 'chat-delete danger-text', () => actions.remove(chat.id)),
  );
  more.addEventListener('click', () => {
    const show = menu.hidden;
    closeMenus(menu);
    menu.hidden = !show;
    more.setAttribute('aria-expanded', String(show));
    menuFor = show ? chat.id : undefined;
    if (show) menu.querySelector('button')?.focus();
  });
  menu.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    e.stopPropagation();
    closeMenus();
    more.focus();
  });
  li.append(open, more, menu);
  if (menuFor === chat.id) {
    menu.hidden = false;
    more.setAttribute('aria-expanded', 'true');
  }
  if (renaming?.id === chat.id) startRename(li, chat, actions, renaming);
  return li;
}

/** Today / Yesterday / Earlier, newest first. */
function byDay(chats: Chat[], currentId: string | null, actions: ChatListActions, level: 'h3' | 'h4'): HTMLLIElement[] {
  const out: HTMLLIElement[] = [];
  let last = '';
  for (const chat of chats) {
    const group = dayGroup(chat.updated);
    if (group !== last) out.push(heading(level, group));
    last = group;
    out.push(row(chat, currentId, actions));
  }
  return out;
}

export function renderChatList(chats: Chat[], currentId: string | null, actions: ChatListActions, placeOf?: (c: Chat) => Place): void {
  const input = ui.chatList.querySelector<HTMLInputElement>('.chat-title-input');
  if (renaming && input) {
    renaming.draft = input.value;
    renaming.focused = document.activeElement === input;
    renaming.selection = [input.selectionStart ?? input.value.length, input.selectionEnd ?? input.value.length];
  }
  if (renaming && !chats.some((c) => c.id === renaming!.id)) renaming = undefined;
  if (menuFor && !chats.some((c) => c.id === menuFor)) menuFor = undefined;
  const shown = chats.filter((c) => matches(c, ui.chatSearch.value.trim()));
  const items: HTMLLIElement[] = [];
  if (placeOf) {
    const desktop = shown.filter((c) => placeOf(c) === 'desktop');
    const phone = shown.filter((c) => placeOf(c) === 'phone');
    if (desktop.length) items.push(heading('h3', 'On the desktop'), ...byDay(desktop, currentId, actions, 'h4'));
    if (phone.length) {
      items.push(heading('h3', 'Only on this phone'));
      const move = el('li', 'chat-move');
      const b = el('button', 'chat-move-button', phone.length === 1 ? 'Move it to the desktop' : `Move these ${phone.length} to the desktop`);
      b.type = 'button';
      b.addEventListener('click', () => actions.moveToDesktop());
      move.append(el('p', 'hint', 'Other phones do not see these.'), b);
      items.push(move, ...byDay(phone, currentId, actions, 'h4'));
    }
  } else items.push(...byDay(shown, currentId, actions, 'h3'));
  ui.chatList.replaceChildren(...items);
  ui.historyEmpty.textContent = chats.length && !shown.length ? 'No chat matches.' : 'No saved chats yet.';
  ui.historyEmpty.hidden = shown.length > 0;
  ui.chatSearch.hidden = chats.length < 2 && !ui.chatSearch.value;
  ui.deleteAll.hidden = chats.length === 0;
  resetDeleteAll();
}

/** The inline title editor in place of the chat's row; `kept` carries a rename on across a redraw. */
function startRename(li: HTMLLIElement, chat: Chat, actions: ChatListActions, kept?: NonNullable<typeof renaming>): void {
  const input = el('input', 'chat-title-input');
  input.type = 'text';
  input.value = kept ? kept.draft : chat.title;
  input.maxLength = 200;
  input.setAttribute('aria-label', 'Chat title');
  const save = el('button', 'chat-save', 'Save');
  save.type = 'button';
  const done = (keep: boolean) => {
    renaming = undefined;
    const title = input.value.replace(/\s+/g, ' ').trim();
    if (keep && title) actions.rename(chat.id, title);
    else actions.rename(chat.id, chat.title);
  };
  save.addEventListener('click', () => done(true));
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      done(true);
    } else if (e.key === 'Escape') done(false);
  });
  li.replaceChildren(input, save);
  renaming = { id: chat.id, draft: input.value, focused: true, selection: [0, input.value.length] };
  if (kept && !kept.focused) return;
  // Focus once the row is in the document (a redraw builds it detached).
  queueMicrotask(() => {
    input.focus();
    input.setSelectionRange(...(kept ? kept.selection : ([0, input.value.length] as [number, number])));
  });
}

let armed: ReturnType<typeof setTimeout> | undefined;

function resetDeleteAll(): void {
  clearTimeout(armed);
  armed = undefined;
  ui.deleteAll.textContent = 'Delete all chats';
}

/** The first tap arms the button for 5 s; the second deletes. */
export function deleteAllClicked(actions: ChatListActions): void {
  if (armed === undefined) {
    ui.deleteAll.textContent = 'Tap again to delete every chat';
    armed = setTimeout(resetDeleteAll, 5000);
    return;
  }
  resetDeleteAll();
  actions.removeAll();
}
