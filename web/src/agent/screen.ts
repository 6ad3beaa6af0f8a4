/**
 * The agent on the phone (issue 25): a Chat | Agent switch under the header (Agent only when the
 * desktop has the agent on, else a one-line hint on the empty chat saying where to turn it on),
 * the session list (sessionList.ts), a new session (newSession.ts), and a session's live view
 * (sessionView.ts) with its Changes (changesView.ts). This module switches between them.
 */
import { app } from '../app';
import { el, ui } from '../dom';
import { agentAvailable, agentApi } from './api';
import { watchAttention } from './attention';
import { mountChanges } from './changesView';
import { mountNewSession } from './newSession';
import { listError, listView, newButton, showSessions, stopListPolling } from './sessionList';
import { closeSession, mountSessionView, openSession, sessionView } from './sessionView';
import { agent, ANY_PENDING, nav } from './state';

type Mode = 'chat' | 'agent';

const MODE_KEY = 'deskrelay.mode';

const modes = el('div', 'modes');
modes.setAttribute('role', 'tablist');
modes.setAttribute('aria-label', 'Mode');
modes.hidden = true;
const tab = (label: string, mode: Mode) => {
  const b = el('button', 'mode', label);
  b.type = 'button';
  b.setAttribute('role', 'tab');
  b.addEventListener('click', () => setMode(mode));
  return b;
};
const chatTab = tab('Chat', 'chat');
const agentTab = tab('Agent', 'agent');
modes.append(chatTab, agentTab);

const offHint = el('p', 'agent-off hint');
offHint.hidden = true;

const screen = el('section', 'agent-screen');
screen.hidden = true;
screen.setAttribute('aria-label', 'Agent');
screen.append(listView, sessionView);

let mode: Mode = sessionStorage.getItem(MODE_KEY) === 'agent' ? 'agent' : 'chat';
/** The page's query as it loaded (initAgent): taking the pairing token out of the address bar also drops it. */
let launchQuery = new URLSearchParams();
/** The chat's own heading, back when the switch goes back to Chat. */
let chatHeadingText = '';

function setMode(next: Mode): void {
  mode = next === 'agent' && agent.available ? 'agent' : 'chat';
  sessionStorage.setItem(MODE_KEY, mode);
  chatTab.setAttribute('aria-selected', String(mode === 'chat'));
  agentTab.setAttribute('aria-selected', String(mode === 'agent'));
  const on = mode === 'agent';
  screen.hidden = !on;
  ui.chat.hidden = on || !ui.pair.hidden;
  if (on && !document.body.classList.contains('agent-mode')) {
    chatHeadingText = ui.chatHeading.textContent ?? '';
    ui.chatHeading.textContent = 'Agent';
  } else if (!on && document.body.classList.contains('agent-mode')) ui.chatHeading.textContent = chatHeadingText;
  document.body.classList.toggle('agent-mode', on);
  if (on) {
    if (!agent.current) void showList();
  } else {
    stopListPolling();
  }
}

/** After each connection: is the agent on at the desk? Shows the switch or the hint. */
export async function refreshAgent(): Promise<void> {
  if (!app.pairing) return hideAgent();
  let state: { on: boolean; message: string };
  try {
    state = await agentAvailable();
  } catch {
    return; // unreachable: the connection line says so; keep what is shown
  }
  agent.available = state.on;
  modes.hidden = !agent.available;
  agentTab.hidden = !agent.available;
  offHint.hidden = agent.available;
  offHint.textContent = agent.available ? '' : offLine(state.message);
  if (!offHint.textContent) offHint.hidden = true;
  setMode(mode);
  if (agent.available) agent.attention ??= watchAttention(agentTab, (id) => void openById(id, ANY_PENDING));
  else stopAttention();
  if (agent.available) openFromAddress();
}

function stopAttention(): void {
  agent.attention?.stop();
  agent.attention = undefined;
}

/** The desk's "how to turn it on" (the door's agent.disabled message), in one short line. */
function offLine(message: string): string {
  const how = message.replace(/^The workspace agent is off on the desktop\.\s*/, '').replace(/ \(or .*\)\.?$/, '').replace(/`/g, '').replace(/\.$/, '');
  return how ? `Agent is off. ${how}.` : '';
}

function hideAgent(): void {
  stopAttention();
  agent.available = false;
  modes.hidden = true;
  offHint.hidden = true;
  screen.hidden = true;
  closeSession();
  document.body.classList.remove('agent-mode');
}

async function showList(): Promise<void> {
  closeSession();
  history.replaceState(null, '', location.pathname);
  await showSessions(() => !screen.hidden);
}

function showSession(id: string, folder: string, title = '', focusCall?: string): void {
  stopListPolling();
  listView.hidden = true;
  openSession(id, folder, title, focusCall);
}

/** `?agent=<id>&call=<callId>` (a notification opened a new page) or the service worker's message. */
function openFromAddress(): void {
  const q = launchQuery;
  launchQuery = new URLSearchParams();
  const id = q.get('agent');
  if (!id) return;
  void openById(id, q.get('call') ?? undefined);
}

async function openById(id: string, callId?: string): Promise<void> {
  if (!agent.available) return;
  setMode('agent');
  let folder = '';
  let title = '';
  try {
    const s = (await agentApi.sessions()).find((x) => x.id === id);
    folder = s?.folder ?? '';
    title = s?.title ?? '';
  } catch {
    /* the stream says what is wrong */
  }
  const { current } = agent;
  if (current?.id === id) {
    const card = callId && callId !== ANY_PENDING ? current.transcript.approvals.get(callId) : current.transcript.pendingCard();
    if (card) card.focus();
    else current.focusCall = callId;
    return;
  }
  showSession(id, folder, title, callId);
}

/** `search`: the page's query as it loaded (main.ts keeps it, as this module is fetched later). */
export function initAgent(search: string): void {
  launchQuery = new URLSearchParams(search);
  nav.showList = showList;
  nav.openSession = showSession;
  nav.refresh = refreshAgent;
  document.querySelector('main')!.prepend(modes);
  ui.empty.append(offHint);
  ui.chat.after(screen);
  mountNewSession(newButton, listError);
  mountChanges();
  mountSessionView(() => !screen.hidden);
}

/** A notification opened while the page was there (main.ts hears the service worker's message). */
export function openNotified(id: string, callId?: string): void {
  void openById(id, callId);
}
