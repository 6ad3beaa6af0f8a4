/**
 * One session on screen: its sticky header (back, title, status, Changes, Stop), an ACP agent's
 * pickers, the live transcript with its approval cards, and the composer. Its elements are built
 * here (not looked up by id): model output shares the document.
 */
import type { AgentEvent } from '../../../server/src/protocol';
import { ApiError } from '../api';
import { el } from '../dom';
import { fitToText } from '../ui/composer';
import { iconButton } from '../ui/icons';
import { showToast } from '../ui/toast';
import { agentApi } from './api';
import type { Answered } from './cards';
import { changesButton } from './changesView';
import { composeForm, composeNote, latestButton, message, mountComposer, waitingButton } from './composer';
import { pickers, resetPickers, showChoices } from './pickers';
import { agent, ANY_PENDING, messageOf, nav } from './state';
import { followSession } from './stream';
import { STATUS_WORDS, Transcript } from './transcript';
import { showWorktree, worktreeBar } from './worktreeBar';

export const sessionView = el('div', 'agent-session-view');
sessionView.hidden = true;
const sessionHead = el('div', 'agent-head');
const back = iconButton('back', 'All sessions', 'agent-back', () => void nav.showList());
const sessionTitles = el('div', 'agent-titles');
const sessionTitle = el('h2', 'agent-title');
const sessionMeta = el('p', 'agent-meta');
sessionMeta.setAttribute('role', 'status');
sessionMeta.setAttribute('aria-live', 'polite');
sessionTitles.append(sessionTitle, sessionMeta);
const stopButton = el('button', 'danger agent-stop', 'Stop');
stopButton.type = 'button';
sessionHead.append(back, sessionTitles, changesButton, stopButton);
const transcriptBox = el('div', 'agent-transcript');
const outcome = el('p', 'agent-outcome');
outcome.setAttribute('role', 'status');
sessionView.append(sessionHead, pickers, transcriptBox, outcome, composeForm);

let focusSoon: ReturnType<typeof setTimeout> | undefined;

function showStatus(t: Transcript): void {
  const { current } = agent;
  const busy = t.status === 'running' || t.status === 'waiting';
  stopButton.hidden = !busy;
  sessionMeta.replaceChildren(el('span', `agent-status ${t.status}`, STATUS_WORDS[t.status]), el('span', '', ` · ${current?.folder ?? ''}`));
  if (current?.instructions) sessionMeta.append(el('span', 'agent-instructions', ` · follows ${current.instructions}`));
  const wt = current?.worktree;
  if (wt) sessionMeta.append(el('span', 'agent-branch', ` · ${wt.branch}`));
  showWorktree(wt, busy);
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

const atBottom = () => document.documentElement.scrollHeight - window.scrollY - window.innerHeight < 120;

/** Whether `el` is between the sticky header and the composer. */
function inView(target: Element): boolean {
  const r = target.getBoundingClientRect();
  const top = sessionHead.getBoundingClientRect().bottom;
  const bottom = composeForm.getBoundingClientRect().top;
  return r.bottom > top + 24 && r.top < bottom - 24;
}

/** "1 waiting ↓" when a card waits off screen; ↓ when the reader left the end of a working session. */
export function updateJumps(): void {
  const t = agent.current?.transcript;
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

/** The session off screen: its stream closed. */
export function closeSession(): void {
  agent.current?.follow.close();
  agent.current = null;
  sessionView.hidden = true;
}

export function openSession(id: string, folder: string, title = '', focusCall?: string): void {
  agent.current?.follow.close();
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
  resetPickers();
  const onEvent = (e: AgentEvent) => {
    const { current } = agent;
    if (e.type === 'commands' && current) current.commands = e.commands;
    if (e.type === 'modes') showChoices('mode', e.current, e.modes);
    if (e.type === 'models') showChoices('model', e.current, e.models);
    if (e.type === 'user' && sessionTitle.textContent === 'Session') sessionTitle.textContent = e.text.split('\n')[0]!.slice(0, 80);
    transcript.apply(e);
    if (e.type === 'status' && current?.id === id) void learnSession(id);
    if (e.type === 'status' || e.type === 'user') showStatus(transcript);
    if (e.type === 'approval' || e.type === 'decision' || e.type === 'status') agent.attention?.refresh();
    if (current?.focusCall === ANY_PENDING && (e.type === 'approval' || e.type === 'decision')) {
      // The replay names every approval, decided or not: the waiting one is known once it settles.
      clearTimeout(focusSoon);
      focusSoon = setTimeout(() => {
        const card = transcript.pendingCard();
        if (!card || agent.current?.focusCall !== ANY_PENDING) return;
        agent.current.focusCall = undefined;
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
  agent.current = { id, folder, transcript, follow, focusCall, commands: [] };
  showStatus(transcript);
  // A pending card already on screen (the push came while the page was open).
  if (focusCall) transcript.approvals.get(focusCall)?.focus();
  fitToText(message);
}

/** Which instructions file the session follows (read before the first model call) and its worktree, from the list. */
async function learnSession(id: string): Promise<void> {
  if (agent.current?.instructions && agent.current.worktree) return;
  const found = (await agentApi.sessions().catch(() => [])).find((x) => x.id === id);
  const { current } = agent;
  if (!found || current?.id !== id) return;
  current.instructions = found.instructions;
  current.worktree = found.worktree;
  showStatus(current.transcript);
}

async function stopSession(): Promise<void> {
  if (!agent.current) return;
  stopButton.disabled = true;
  try {
    await agentApi.stop(agent.current.id);
  } catch (err) {
    showToast(messageOf(err));
  } finally {
    stopButton.disabled = false;
  }
}

/** Wires the view's buttons, the composer and the jumps (initAgent). */
export function mountSessionView(showing: () => boolean): void {
  mountComposer(toEnd);
  stopButton.addEventListener('click', () => void stopSession());
  waitingButton.addEventListener('click', () => agent.current?.transcript.pendingCard()?.focus());
  latestButton.addEventListener('click', toEnd);
  window.addEventListener('scroll', () => {
    if (!sessionView.hidden && showing()) updateJumps();
  }, { passive: true });
  // Back from sleep, online again, the page shown again: resume the stream (Last-Event-ID).
  const wake = () => {
    if (document.visibilityState === 'visible') agent.current?.follow.wake();
  };
  document.addEventListener('visibilitychange', wake);
  window.addEventListener('online', wake);
  window.addEventListener('pageshow', wake);
}
