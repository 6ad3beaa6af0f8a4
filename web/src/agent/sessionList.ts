/** The agent's session list: each session's title, folder, status and waiting approvals, kept fresh while on screen. */
import { ApiError } from '../api';
import { el } from '../dom';
import { icon } from '../ui/icons';
import { agentApi, type AgentSessionSummary } from './api';
import { messageOf, nav } from './state';
import { STATUS_WORDS } from './transcript';

export const listView = el('div', 'agent-list-view');
const listHead = el('div', 'agent-head');
const listTitle = el('h2', 'agent-title', 'Agent sessions');
export const newButton = el('button', 'primary agent-new', 'New session');
newButton.type = 'button';
listHead.append(listTitle, newButton);
const listEmpty = el('p', 'hint', 'No sessions yet. Start one: the desktop\u2019s model works in a folder there, and asks you before every edit and command.');
const list = el('ul', 'agent-sessions');
list.setAttribute('aria-label', 'Sessions');
export const listError = el('p', 'error');
listError.setAttribute('role', 'alert');
// A tool server that is not working is said here: the agent works without its tools.
const serversNote = el('p', 'hint agent-servers');
serversNote.hidden = true;
listView.append(listHead, listError, serversNote, listEmpty, list);

let listTimer: ReturnType<typeof setInterval> | undefined;

function when(iso: string): string {
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

function sessionItem(s: AgentSessionSummary): HTMLLIElement {
  const li = el('li', `agent-item status-${s.status}`);
  const open = el('button', 'agent-open');
  open.type = 'button';
  const top = el('span', 'agent-item-top');
  top.append(el('span', 'agent-item-title', s.title || 'Untitled'));
  if (s.pending > 0) {
    const badge = el('span', 'badge', String(s.pending));
    badge.setAttribute('aria-label', `${s.pending} approval${s.pending === 1 ? '' : 's'} waiting`);
    top.append(badge);
  }
  const meta = el('span', 'agent-item-meta');
  meta.append(icon('folder'), el('span', '', s.folder), el('span', `agent-status ${s.status}`, STATUS_WORDS[s.status]), el('span', '', when(s.updatedAt)));
  open.append(top, meta);
  open.addEventListener('click', () => nav.openSession(s.id, s.folder, s.title));
  li.append(open);
  return li;
}

async function loadList(): Promise<void> {
  try {
    const sessions = await agentApi.sessions();
    listError.textContent = '';
    void agentApi.toolServers().then((servers) => {
      const down = servers.filter((x) => !x.ok);
      serversNote.textContent = down.map((x) => `Tool server \u201c${x.name}\u201d is not working: ${x.error ?? ''}`).join('\n');
      serversNote.hidden = down.length === 0;
    }, () => {});
    list.replaceChildren(...sessions.map(sessionItem));
    listEmpty.hidden = sessions.length > 0;
  } catch (err) {
    listError.textContent = messageOf(err);
    listEmpty.hidden = true; // "No sessions yet" would contradict the refusal (e.g. agent.device_not_allowed)
    if (err instanceof ApiError && err.code === 'agent.disabled') void nav.refresh();
  }
}

/** The list on screen, loaded now and polled while it shows (`showing`). */
export async function showSessions(showing: () => boolean): Promise<void> {
  listView.hidden = false;
  await loadList();
  clearInterval(listTimer);
  // The list's statuses and badges change on the desk too; a light poll while it is on screen.
  listTimer = setInterval(() => {
    if (!listView.hidden && showing() && document.visibilityState === 'visible') void loadList();
  }, 5000);
}

export function stopListPolling(): void {
  clearInterval(listTimer);
}
