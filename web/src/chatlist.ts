/**
 * The saved chats' list: open, rename (inline), export as Markdown (the share sheet), delete,
 * delete all (a second tap confirms).
 * Titles are user text (or the first message): only ever set as textContent.
 */
import type { Chat } from './chats';
import { el, ui } from './dom';
import { iconButton } from './ui/icons';

export interface ChatListActions {
  open(id: string): void;
  rename(id: string, title: string): void;
  export(id: string): void;
  remove(id: string): void;
  removeAll(): void;
}

const when = (t: number) => new Date(t).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * The chat being renamed and what the user has typed so far. The list is drawn anew whenever the
 * chats change (a reply ending, another phone's change through the desktop's feed), and that must
 * not take a half-typed title away.
 */
let renaming: { id: string; draft: string; focused: boolean; selection: [number, number] } | undefined;

export function renderChatList(chats: Chat[], currentId: string | null, actions: ChatListActions): void {
  const input = ui.chatList.querySelector<HTMLInputElement>('.chat-title-input');
  if (renaming && input) {
    renaming.draft = input.value;
    renaming.focused = document.activeElement === input;
    renaming.selection = [input.selectionStart ?? input.value.length, input.selectionEnd ?? input.value.length];
  }
  if (renaming && !chats.some((c) => c.id === renaming!.id)) renaming = undefined;
  ui.chatList.replaceChildren(
    ...chats.map((chat) => {
      const li = el('li', chat.id === currentId ? 'chat-item current' : 'chat-item');
      const open = el('button', 'chat-open');
      open.type = 'button';
      open.append(el('span', 'chat-title', chat.title || 'New chat'), el('span', 'chat-when', when(chat.updated)));
      if (chat.id === currentId) open.setAttribute('aria-current', 'true');
      open.addEventListener('click', () => actions.open(chat.id));
      const rename = iconButton('rename', `Rename “${chat.title || 'New chat'}”`, 'chat-rename', () => startRename(li, chat, actions));
      // Undo is offered after a delete (a toast), so it needs no second tap.
      const remove = iconButton('trash', `Delete “${chat.title || 'New chat'}”`, 'chat-delete', () => actions.remove(chat.id));
      const share = iconButton('share', `Export “${chat.title || 'New chat'}” as Markdown`, 'chat-export', () => actions.export(chat.id));
      li.append(open, rename, share, remove);
      if (renaming?.id === chat.id) startRename(li, chat, actions, renaming);
      return li;
    }),
  );
  ui.historyEmpty.hidden = chats.length > 0;
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
