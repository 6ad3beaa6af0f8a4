/**
 * The agent on the phone (issue 25): a Chat | Agent switch under the header (Agent only when the
 * desktop has the agent on, else a one-line hint on the empty chat saying where to turn it on),
 * the session list, a new session (folder and prompt, in a sheet), and a session's live view with
 * its composer (the next turn, queued while one runs), Stop and `@` file suggestions.
 * Its elements are built here (not looked up by id): model output shares the document.
 */
import type { AgentChoice, AgentCommand, AgentEvent } from '../../../server/src/protocol';
import { ApiError } from '../api';
import { app } from '../app';
import { el, ui } from '../dom';
import { autoGrow, fitToText } from '../ui/composer';
import { icon, iconButton } from '../ui/icons';
import { closeLayer, openLayer } from '../ui/layer';
import { showToast } from '../ui/toast';
import { agentApi, agentAvailable, type AgentFolder, type AgentSessionSummary } from './api';
import type { Answered } from './cards';
import { followSession, type Follow } from './stream';
import { STATUS_WORDS, Transcript } from './transcript';
import { attachMentions } from './mentions';
import { watchAttention, type Attention } from './attention';

type Mode = 'chat' | 'agent';

const MODE_KEY = 'deskrelay.mode';

// --- The switch and the screen ----------------------------------------------------------------

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

// The list view.
const listView = el('div', 'agent-list-view');
const listHead = el('div', 'agent-head');
const listTitle = el('h2', 'agent-title', 'Agent sessions');
const newButton = el('button', 'primary agent-new', 'New session');
newButton.type = 'button';
listHead.append(listTitle, newButton);
const listEmpty = el('p', 'hint', 'No sessions yet. Start one: the desktop\u2019s model works in a folder there, and asks you before every edit and command.');
const list = el('ul', 'agent-sessions');
list.setAttribute('aria-label', 'Sessions');
const listError = el('p', 'error');
listError.setAttribute('role', 'alert');
// A tool server that is not working is said here: the agent works without its tools.
const serversNote = el('p', 'hint agent-servers');
serversNote.hidden = true;
listView.append(listHead, listError, serversNote, listEmpty, list);

// The session view.
const sessionView = el('div', 'agent-session-view');
sessionView.hidden = true;
const sessionHead = el('div', 'agent-head');
const back = iconButton('back', 'All sessions', 'agent-back', () => void showList());
const sessionTitles = el('div', 'agent-titles');
const sessionTitle = el('h2', 'agent-title');
const sessionMeta = el('p', 'agent-meta');
sessionMeta.setAttribute('role', 'status');
sessionMeta.setAttribute('aria-live', 'polite');
sessionTitles.append(sessionTitle, sessionMeta);
const stopButton = el('button', 'danger agent-stop', 'Stop');
stopButton.type = 'button';
sessionHead.append(back, sessionTitles, stopButton);
// An ACP agent's modes and models, where it offers a choice.
const pickers = el('div', 'agent-pickers');
pickers.hidden = true;
const picker = (what: 'mode' | 'model', label: string) => {
  const wrap = el('div', 'agent-picker');
  const select = el('select');
  select.id = `agent-${what}-picker`;
  const name = el('label', '', label);
  name.htmlFor = select.id;
  wrap.append(name, select);
  wrap.hidden = true;
  select.addEventListener('change', () => void choose(what, select));
  pickers.append(wrap);
  return select;
};
const modeSelect = picker('mode', 'Agent mode');
const modelSelect = picker('model', 'Agent model');
const transcriptBox = el('div', 'agent-transcript');
const outcome = el('p', 'agent-outcome');
outcome.setAttribute('role', 'status');
// Not "compose": that class names the chat's composer form, which tests and styles find by it.
const composeForm = el('form', 'agent-compose');
const mentionList = el('ul', 'mentions');
mentionList.setAttribute('role', 'listbox');
mentionList.setAttribute('aria-label', 'Files');
mentionList.hidden = true;
const composer = el('div', 'composer');
const messageLabel = el('label', 'visually-hidden', 'Message to the agent');
const message = el('textarea');
message.rows = 1;
message.placeholder = 'Message the agent (@ for a file)';
message.enterKeyHint = 'enter';
const messageId = 'agent-message';
message.id = messageId;
messageLabel.htmlFor = messageId;
const sendButton = el('button', 'icon round send');
sendButton.type = 'submit';
sendButton.setAttribute('aria-label', 'Send');
sendButton.title = 'Send';
sendButton.append(arrowIcon());
composer.append(messageLabel, message, sendButton);
const composeNote = el('p', 'hint agent-queued');
composeNote.setAttribute('aria-live', 'polite');
// Floating above the composer: the waiting card when it is off screen, and the end of the
// transcript when the reader scrolled up while the session works.
const waitingButton = el('button', 'jump waiting-jump');
waitingButton.type = 'button';
waitingButton.hidden = true;
const latestButton = el('button', 'jump latest-jump', '↓');
latestButton.type = 'button';
latestButton.hidden = true;
latestButton.setAttribute('aria-label', 'Jump to the latest');
composeForm.append(waitingButton, latestButton, mentionList, composeNote, composer);
sessionView.append(sessionHead, pickers, transcriptBox, outcome, composeForm);

screen.append(listView, sessionView);

// The new-session sheet.
const sheet = el('section', 'sheet agent-sheet');
sheet.hidden = true;
sheet.setAttribute('role', 'dialog');
sheet.setAttribute('aria-modal', 'true');
const sheetHead = el('div', 'sheet-head');
const sheetTitle = el('h2', '', 'New agent session');
sheetTitle.id = 'agent-new-title';
sheet.setAttribute('aria-labelledby', sheetTitle.id);
const sheetClose = iconButton('trash', 'Close', '', closeLayer);
sheetClose.replaceChildren(closeIcon());
sheetHead.append(sheetTitle, sheetClose);
const newForm = el('form', 'group agent-new-form');
const folderLabel = el('label', 'group-title', 'Folder');
const folderSelect = el('select');
folderSelect.id = 'agent-folder';
folderLabel.htmlFor = folderSelect.id;
const folderPath = el('p', 'hint agent-folder-path');
const agentLabel = el('label', 'group-title', 'Agent');
const agentSelect = el('select');
agentSelect.id = 'agent-agent';
agentLabel.htmlFor = agentSelect.id;
const agentReasons = el('details', 'hint agent-unavailable');
const agentReasonList = el('ul');
agentReasons.append(el('summary', '', 'Agents not on this desk'), agentReasonList);
const promptLabel = el('label', 'group-title', 'What should it do?');
const prompt = el('textarea');
prompt.id = 'agent-prompt';
prompt.rows = 4;
prompt.required = true;
prompt.placeholder = 'e.g. Fix the failing test in src/math.js';
promptLabel.htmlFor = prompt.id;
const worktreeLabel = el('label', 'agent-worktree-switch');
const worktreeBox = el('input');
worktreeBox.type = 'checkbox';
worktreeBox.id = 'agent-worktree';
worktreeLabel.htmlFor = worktreeBox.id;
worktreeLabel.append(worktreeBox, el('span', '', ' Work in a worktree of its own (a new git branch; merge or discard it later)'));
const newError = el('p', 'error');
newError.setAttribute('role', 'alert');
const start = el('button', 'primary', 'Start');
start.type = 'submit';
newForm.append(folderLabel, folderSelect, folderPath, agentLabel, agentSelect, agentReasons, promptLabel, prompt, worktreeLabel, newError, start);
sheet.append(sheetHead, newForm);

function arrowIcon(): SVGSVGElement {
  const svg = icon('back');
  svg.firstElementChild!.setAttribute('d', 'M12 19V5M5 12l7-7 7 7');
  return svg;
}
function closeIcon(): SVGSVGElement {
  const svg = icon('back');
  svg.firstElementChild!.setAttribute('d', 'M6 6l12 12M18 6 6 18');
  return svg;
}

// --- State --------------------------------------------------------------------------------------

let mode: Mode = sessionStorage.getItem(MODE_KEY) === 'agent' ? 'agent' : 'chat';
let available = false;
let folders: AgentFolder[] = [];
let current: { id: string; folder: string; transcript: Transcript; follow: Follow; focusCall?: string; commands: AgentCommand[]; instructions?: string; worktree?: { branch: string; into?: string } } | null = null;
let listTimer: ReturnType<typeof setInterval> | undefined;
/** The page's query as it loaded (initAgent): taking the pairing token out of the address bar also drops it. */
let launchQuery = new URLSearchParams();
/** The chat's own heading, back when the switch goes back to Chat. */
let chatHeadingText = '';
/** The count of approvals waiting, on the tab, the header, the title and the Chat screen. */
let attention: Attention | undefined;
/** `focusCall` meaning "whichever card is still waiting" (the session list does not name the call). */
const ANY_PENDING = '*';

function setMode(next: Mode): void {
  mode = next === 'agent' && available ? 'agent' : 'chat';
  sessionStorage.setItem(MODE_KEY, mode);
  chatTab.setAttribute('aria-selected', String(mode === 'chat'));
  agentTab.setAttribute('aria-selected', String(mode === 'agent'));
  const agent = mode === 'agent';
  screen.hidden = !agent;
  ui.chat.hidden = agent || !ui.pair.hidden;
  if (agent && !document.body.classList.contains('agent-mode')) {
    chatHeadingText = ui.chatHeading.textContent ?? '';
    ui.chatHeading.textContent = 'Agent';
  } else if (!agent && document.body.classList.contains('agent-mode')) ui.chatHeading.textContent = chatHeadingText;
  document.body.classList.toggle('agent-mode', agent);
  if (agent) {
    if (!current) void showList();
  } else {
    clearInterval(listTimer);
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
  available = state.on;
  modes.hidden = !available;
  agentTab.hidden = !available;
  offHint.hidden = available;
  offHint.textContent = available ? '' : offLine(state.message);
  if (!offHint.textContent) offHint.hidden = true;
  setMode(mode);
  if (available) attention ??= watchAttention(agentTab, (id) => void openById(id, ANY_PENDING));
  else stopAttention();
  if (available) openFromAddress();
}

function stopAttention(): void {
  attention?.stop();
  attention = undefined;
}

/** The desk's "how to turn it on" (the door's agent.disabled message), in one short line. */
function offLine(message: string): string {
  const how = message.replace(/^The workspace agent is off on the desktop\.\s*/, '').replace(/ \(or .*\)\.?$/, '').replace(/`/g, '').replace(/\.$/, '');
  return how ? `Agent is off. ${how}.` : '';
}

function hideAgent(): void {
  stopAttention();
  available = false;
  modes.hidden = true;
  offHint.hidden = true;
  screen.hidden = true;
  current?.follow.close();
  current = null;
  document.body.classList.remove('agent-mode');
}

// --- The list -----------------------------------------------------------------------------------

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
  open.addEventListener('click', () => openSession(s.id, s.folder, s.title));
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
    listError.textContent = err instanceof Error ? err.message : String(err);
    listEmpty.hidden = true; // "No sessions yet" would contradict the refusal (e.g. agent.device_not_allowed)
    if (err instanceof ApiError && err.code === 'agent.disabled') void refreshAgent();
  }
}

async function showList(): Promise<void> {
  current?.follow.close();
  current = null;
  sessionView.hidden = true;
  listView.hidden = false;
  history.replaceState(null, '', location.pathname);
  await loadList();
  clearInterval(listTimer);
  // The list's statuses and badges change on the desk too; a light poll while it is on screen.
  listTimer = setInterval(() => {
    if (!listView.hidden && !screen.hidden && document.visibilityState === 'visible') void loadList();
  }, 5000);
}

// --- A session ----------------------------------------------------------------------------------

function showStatus(t: Transcript): void {
  const busy = t.status === 'running' || t.status === 'waiting';
  stopButton.hidden = !busy;
  sessionMeta.replaceChildren(el('span', `agent-status ${t.status}`, STATUS_WORDS[t.status]), el('span', '', ` · ${current?.folder ?? ''}`));
  if (current?.instructions) sessionMeta.append(el('span', 'agent-instructions', ` · follows ${current.instructions}`));
  const wt = current?.worktree;
  worktreeBar.hidden = !wt;
  if (wt) {
    sessionMeta.append(el('span', 'agent-branch', ` · ${wt.branch}`));
    mergeButton.textContent = `Merge into ${wt.into ?? 'the project'}`;
    mergeButton.disabled = discardButton.disabled = busy;
  }
  outcome.textContent = t.status === 'idle' ? 'The agent finished this turn. Send a message to go on.' : t.status === 'stopped' ? 'Stopped. A new message starts a new turn.' : t.status === 'failed' ? 'The turn failed (see above). Send a message to try again.' : '';
  outcome.className = `agent-outcome ${t.status}`;
  outcome.hidden = !outcome.textContent;
  composeNote.textContent = busy ? 'A message now waits until the agent next stops.' : '';
  updateJumps();
}

/** The end of the transcript, and following it from there. */
function toEnd(): void {
  window.scrollTo(0, document.documentElement.scrollHeight);
  updateJumps();
}

/** Whether `el` is between the sticky header and the composer. */
function inView(target: Element): boolean {
  const r = target.getBoundingClientRect();
  const top = sessionHead.getBoundingClientRect().bottom;
  const bottom = composeForm.getBoundingClientRect().top;
  return r.bottom > top + 24 && r.top < bottom - 24;
}

/** "1 waiting ↓" when a card waits off screen; ↓ when the reader left the end of a working session. */
function updateJumps(): void {
  const t = current?.transcript;
  const waiting = t ? [...t.approvals.values()].filter((a) => a.open) : [];
  const offScreen = !sessionView.hidden && waiting.length > 0 && !inView(waiting[0]!.li);
  waitingButton.hidden = !offScreen;
  if (offScreen) {
    const below = waiting[0]!.li.getBoundingClientRect().top > 0;
    waitingButton.textContent = `${waiting.length} waiting ${below ? '↓' : '↑'}`;
    waitingButton.setAttribute('aria-label', `${waiting.length} approval${waiting.length === 1 ? '' : 's'} waiting: show`);
  }
  latestButton.hidden = offScreen || sessionView.hidden || !t || t.status !== 'running' || atBottom();
}

function openSession(id: string, folder: string, title = '', focusCall?: string): void {
  clearInterval(listTimer);
  current?.follow.close();
  listView.hidden = true;
  sessionView.hidden = false;
  sessionTitle.textContent = title || 'Session';
  history.replaceState(null, '', `?agent=${encodeURIComponent(id)}`);
  // A decision names its own card's call only; a retry after a lost response is the same call
  // again, and 409 means it was decided already (elsewhere, or by the lost request).
  const transcript = new Transcript(folder, (approval, d) => agentApi.decide(id, approval, d).then((): Answered => 'done', (err: unknown): Answered => {
    if (err instanceof ApiError && err.code === 'agent.not_pending') return 'already';
    throw err;
  }));
  transcriptBox.replaceChildren(worktreeBar, transcript.log);
  pickers.hidden = true;
  for (const select of [modeSelect, modelSelect]) select.parentElement!.hidden = true;
  const onEvent = (e: AgentEvent) => {
    if (e.type === 'commands' && current) current.commands = e.commands;
    if (e.type === 'modes') showChoices(modeSelect, e.current, e.modes);
    if (e.type === 'models') showChoices(modelSelect, e.current, e.models);
    if (e.type === 'user' && sessionTitle.textContent === 'Session') sessionTitle.textContent = e.text.split('\n')[0]!.slice(0, 80);
    transcript.apply(e);
    if (e.type === 'status' && current?.id === id) void learnSession(id);
    if (e.type === 'status' || e.type === 'user') showStatus(transcript);
    if (e.type === 'approval' || e.type === 'decision' || e.type === 'status') attention?.refresh();
    if (current?.focusCall === ANY_PENDING && (e.type === 'approval' || e.type === 'decision')) {
      // The replay names every approval, decided or not: the waiting one is known once it settles.
      clearTimeout(focusSoon);
      focusSoon = setTimeout(() => {
        const card = transcript.pendingCard();
        if (!card || current?.focusCall !== ANY_PENDING) return;
        current.focusCall = undefined;
        card.focus();
      }, 100);
    } else if (current?.focusCall && e.type === 'approval' && e.callId === current.focusCall) {
      current.focusCall = undefined;
      requestAnimationFrame(() => transcript.approvals.get(e.callId)?.focus());
    } else if (e.type === 'user' || atBottom()) {
      // A new turn (or the reader at the end): what is happening now is shown.
      requestAnimationFrame(toEnd);
    }
    requestAnimationFrame(updateJumps);
  };
  const follow = followSession(id, onEvent, (reach, why) => {
    if (reach === 'reconnecting') sessionMeta.textContent = 'Reconnecting…';
    else if (reach === 'live') showStatus(transcript);
    else if (reach === 'ended') {
      outcome.textContent = why ?? '';
      outcome.hidden = false;
      stopButton.hidden = true;
    }
  });
  current = { id, folder, transcript, follow, focusCall, commands: [] };
  showStatus(transcript);
  // A pending card already on screen (the push came while the page was open).
  if (focusCall) transcript.approvals.get(focusCall)?.focus();
  fitToText(message);
}

let focusSoon: ReturnType<typeof setTimeout> | undefined;

/** Which instructions file the session follows (read before the first model call) and its worktree, from the list. */
async function learnSession(id: string): Promise<void> {
  if (current?.instructions && current.worktree) return;
  const found = (await agentApi.sessions().catch(() => [])).find((x) => x.id === id);
  if (!found || current?.id !== id) return;
  current.instructions = found.instructions;
  current.worktree = found.worktree;
  showStatus(current.transcript);
}

// A worktree session's own buttons: Merge (asked like a command: its card appears) and Discard.
const worktreeBar = el('div', 'agent-worktree-bar');
worktreeBar.hidden = true;
const mergeButton = el('button', 'agent-merge', 'Merge');
mergeButton.type = 'button';
const discardButton = el('button', 'danger agent-discard', 'Discard');
discardButton.type = 'button';
worktreeBar.append(mergeButton, discardButton);
mergeButton.addEventListener('click', () => {
  if (!current) return;
  void agentApi.merge(current.id).catch((err: unknown) => showToast(err instanceof Error ? err.message : String(err)));
});
discardButton.addEventListener('click', () => {
  if (!current || !confirm('Discard this session\u2019s worktree and branch, with every change in them?')) return;
  void agentApi.discard(current.id).then(() => showList(), (err: unknown) => showToast(err instanceof Error ? err.message : String(err)));
});

function showChoices(select: HTMLSelectElement, now: string, choices: AgentChoice[]): void {
  select.replaceChildren(...choices.map((c) => {
    const o = el('option', '', c.unasked ? `${c.name} (at the desk only)` : c.name);
    o.value = c.id;
    o.disabled = c.unasked === true && c.id !== now;
    if (c.description) o.title = c.description;
    return o;
  }));
  select.value = now;
  select.dataset.current = now;
  select.parentElement!.hidden = choices.length < 2;
  pickers.hidden = modeSelect.parentElement!.hidden && modelSelect.parentElement!.hidden;
}

async function choose(what: 'mode' | 'model', select: HTMLSelectElement): Promise<void> {
  if (!current) return;
  try {
    await agentApi.choose(current.id, what, select.value);
  } catch (err) {
    select.value = select.dataset.current ?? select.value;
    showToast(err instanceof Error ? err.message : String(err));
  }
}

const atBottom = () => document.documentElement.scrollHeight - window.scrollY - window.innerHeight < 120;

/** `?agent=<id>&call=<callId>` (a notification opened a new page) or the service worker's message. */
function openFromAddress(): void {
  const q = launchQuery;
  launchQuery = new URLSearchParams();
  const id = q.get('agent');
  if (!id) return;
  void openById(id, q.get('call') ?? undefined);
}

async function openById(id: string, callId?: string): Promise<void> {
  if (!available) return;
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
  if (current?.id === id) {
    const card = callId && callId !== ANY_PENDING ? current.transcript.approvals.get(callId) : current.transcript.pendingCard();
    if (card) card.focus();
    else current.focusCall = callId;
    return;
  }
  openSession(id, folder, title, callId);
}

// --- New session ----------------------------------------------------------------------------------

async function openNew(): Promise<void> {
  newError.textContent = '';
  try {
    folders = await agentApi.folders();
  } catch (err) {
    listError.textContent = err instanceof Error ? err.message : String(err);
    return;
  }
  folderSelect.replaceChildren(...folders.map((f) => {
    const o = el('option', '', f.name);
    o.value = f.name;
    return o;
  }));
  const showPath = () => (folderPath.textContent = folders.find((f) => f.name === folderSelect.value)?.path ?? '');
  folderSelect.onchange = showPath;
  showPath();
  // Which agent: DeskRelay's own, or an ACP agent the desk has; those it lacks say how to add them.
  const agents = await agentApi.agents();
  agentSelect.replaceChildren(...agents.filter((a) => a.available).map((a) => {
    const o = el('option', '', a.name);
    o.value = a.id;
    return o;
  }));
  agentReasonList.replaceChildren(...agents.filter((a) => !a.available).map((a) => el('li', '', `${a.name}: ${a.reason ?? 'not available'}`)));
  agentLabel.hidden = agentSelect.hidden = agentSelect.options.length < 2;
  agentReasons.hidden = agentReasonList.childElementCount === 0;
  openLayer(sheet, newButton);
  prompt.focus();
}

async function startSession(): Promise<void> {
  const text = prompt.value.trim();
  if (!text) {
    newError.textContent = 'Say what the agent should do.';
    prompt.focus();
    return;
  }
  start.disabled = true;
  try {
    const created = await agentApi.create(text, folderSelect.value, agentSelect.hidden ? undefined : agentSelect.value, worktreeBox.checked);
    prompt.value = '';
    worktreeBox.checked = false;
    closeLayer();
    openSession(created.id, created.folder, text.split('\n')[0]!.slice(0, 80));
  } catch (err) {
    newError.textContent = err instanceof Error ? err.message : String(err);
  } finally {
    start.disabled = false;
  }
}

// --- The composer ---------------------------------------------------------------------------------

async function sendMessage(): Promise<void> {
  const text = message.value.trim();
  if (!text || !current) return;
  const { id } = current;
  sendButton.disabled = true;
  try {
    await agentApi.message(id, text);
    message.value = '';
    fitToText(message);
    toEnd();
  } catch (err) {
    showToast(err instanceof Error ? err.message : String(err));
  } finally {
    sendButton.disabled = false;
  }
}

async function stopSession(): Promise<void> {
  if (!current) return;
  stopButton.disabled = true;
  try {
    await agentApi.stop(current.id);
  } catch (err) {
    showToast(err instanceof Error ? err.message : String(err));
  } finally {
    stopButton.disabled = false;
  }
}

// --- Wiring -----------------------------------------------------------------------------------------

/** `search`: the page's query as it loaded (main.ts keeps it, as this module is fetched later). */
export function initAgent(search: string): void {
  launchQuery = new URLSearchParams(search);
  document.querySelector('main')!.prepend(modes);
  ui.empty.append(offHint);
  ui.chat.after(screen);
  document.body.append(sheet);
  newButton.addEventListener('click', () => void openNew());
  newForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void startSession();
  });
  composeForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void sendMessage();
  });
  message.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.isComposing || !mentionList.hidden) return;
    if (e.ctrlKey || e.metaKey || (!matchMedia('(pointer: coarse)').matches && !e.shiftKey && !e.altKey)) {
      e.preventDefault();
      composeForm.requestSubmit();
    }
  });
  autoGrow(message);
  attachMentions(message, mentionList, () => current?.folder ?? '', () => current?.commands ?? []);
  stopButton.addEventListener('click', () => void stopSession());
  waitingButton.addEventListener('click', () => current?.transcript.pendingCard()?.focus());
  latestButton.addEventListener('click', toEnd);
  window.addEventListener('scroll', () => {
    if (!sessionView.hidden && !screen.hidden) updateJumps();
  }, { passive: true });
  // Back from sleep, online again, the page shown again: resume the stream (Last-Event-ID).
  const wake = () => {
    if (document.visibilityState === 'visible') current?.follow.wake();
  };
  document.addEventListener('visibilitychange', wake);
  window.addEventListener('online', wake);
  window.addEventListener('pageshow', wake);
}

/** A notification opened while the page was there (main.ts hears the service worker's message). */
export function openNotified(id: string, callId?: string): void {
  void openById(id, callId);
}
