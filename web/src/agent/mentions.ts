/**
 * `@` in the agent's composer: the folder's files matching what follows it
 * (`GET /v1/agent/files`), as a list above the composer; a tap (or Enter) puts the path in.
 * `/` at the start: an ACP agent's commands (its `commands` event), put in as `/name `.
 */
import type { AgentCommand } from '../../../server/src/protocol';
import { el } from '../dom';
import { agentApi } from './api';

const TOKEN = /(^|\s)@([^\s@]*)$/;
const SLASH = /^\/([^\s/]*)$/;

export function attachMentions(box: HTMLTextAreaElement, listbox: HTMLUListElement, folder: () => string, commands: () => readonly AgentCommand[] = () => []): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let asked = 0;
  let active = -1;

  const hide = () => {
    listbox.hidden = true;
    listbox.replaceChildren();
    active = -1;
    box.removeAttribute('aria-activedescendant');
  };

  const insert = (path: string) => {
    const before = box.value.slice(0, box.selectionStart);
    if (SLASH.test(before)) return put(`${path} `, box.value.slice(box.selectionStart));
    const after = box.value.slice(box.selectionStart);
    const m = TOKEN.exec(before);
    if (!m) return;
    put(`${before.slice(0, before.length - m[2]!.length - 1)}@${path} `, after);
  };

  const put = (head: string, after: string) => {
    box.value = head + after;
    box.setSelectionRange(head.length, head.length);
    hide();
    box.focus();
    box.dispatchEvent(new Event('input'));
  };

  const options = () => [...listbox.querySelectorAll<HTMLButtonElement>('button')];
  const highlight = (i: number) => {
    const all = options();
    active = all.length ? (i + all.length) % all.length : -1;
    all.forEach((b, n) => b.parentElement!.setAttribute('aria-selected', String(n === active)));
  };

  const suggest = async () => {
    const before = box.value.slice(0, box.selectionStart);
    const slash = SLASH.exec(before);
    const m = TOKEN.exec(before);
    const n = ++asked;
    let files: { value: string; note?: string }[];
    if (slash && commands().length > 0) {
      const q = slash[1]!.toLowerCase();
      files = commands().filter((c) => c.name.toLowerCase().startsWith(q)).slice(0, 8).map((c) => ({ value: `/${c.name}`, note: c.hint ? `${c.description} (${c.hint})` : c.description }));
    } else {
      if (!m || !folder()) return hide();
      try {
        files = (await agentApi.files(folder(), m[2]!)).files.slice(0, 8).map((value) => ({ value }));
      } catch {
        return hide();
      }
    }
    if (n !== asked) return;
    if (!files.length) return hide();
    listbox.replaceChildren(
      ...files.map(({ value: f, note }) => {
        const li = el('li');
        li.setAttribute('role', 'option');
        const b = el('button', 'mention', f);
        if (note) b.append(el('span', 'mention-note', ` ${note}`));
        b.type = 'button';
        b.tabIndex = -1;
        // Before the textarea loses focus to the tap.
        b.addEventListener('pointerdown', (e) => e.preventDefault());
        b.dataset.value = f;
        b.addEventListener('click', () => insert(f));
        li.append(b);
        return li;
      }),
    );
    listbox.hidden = false;
    active = -1;
  };

  box.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => void suggest(), 120);
  });
  box.addEventListener('keydown', (e) => {
    if (listbox.hidden) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      highlight(active + (e.key === 'ArrowDown' ? 1 : -1));
    } else if (e.key === 'Enter' || e.key === 'Tab') {
      const pick = options()[active < 0 ? 0 : active];
      if (pick) {
        e.preventDefault();
        insert(pick.dataset.value ?? '');
      }
    } else if (e.key === 'Escape') {
      e.stopPropagation();
      hide();
    }
  });
  box.addEventListener('blur', () => setTimeout(hide, 150));
}
