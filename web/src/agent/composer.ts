/**
 * A session's composer: the next message (queued while a turn runs), `@` file and `/` command
 * suggestions, and the two buttons floating above it (the waiting card when it is off screen,
 * the end of the transcript when the reader scrolled up while the session works).
 */
import { el } from '../dom';
import { autoGrow, fitToText } from '../ui/composer';
import { showToast } from '../ui/toast';
import { agentApi } from './api';
import { arrowIcon } from './glyphs';
import { attachMentions } from './mentions';
import { agent, messageOf } from './state';

// Not "compose": that class names the chat's composer form, which tests and styles find by it.
export const composeForm = el('form', 'agent-compose');
const mentionList = el('ul', 'mentions');
mentionList.setAttribute('role', 'listbox');
mentionList.setAttribute('aria-label', 'Files');
mentionList.hidden = true;
const composer = el('div', 'composer');
const messageLabel = el('label', 'visually-hidden', 'Message to the agent');
export const message = el('textarea');
message.rows = 1;
message.placeholder = 'Message the agent (@ for a file)';
message.enterKeyHint = 'enter';
message.id = 'agent-message';
messageLabel.htmlFor = message.id;
const sendButton = el('button', 'icon round send');
sendButton.type = 'submit';
sendButton.setAttribute('aria-label', 'Send');
sendButton.title = 'Send';
sendButton.append(arrowIcon());
composer.append(messageLabel, message, sendButton);
export const composeNote = el('p', 'hint agent-queued');
composeNote.setAttribute('aria-live', 'polite');
export const waitingButton = el('button', 'jump waiting-jump');
waitingButton.type = 'button';
waitingButton.hidden = true;
export const latestButton = el('button', 'jump latest-jump', '↓');
latestButton.type = 'button';
latestButton.hidden = true;
latestButton.setAttribute('aria-label', 'Jump to the latest');
composeForm.append(waitingButton, latestButton, mentionList, composeNote, composer);

/** Wires the composer; `sent` runs after a message went (the transcript's end is shown). */
export function mountComposer(sent: () => void): void {
  composeForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void sendMessage(sent);
  });
  message.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.isComposing || !mentionList.hidden) return;
    if (e.ctrlKey || e.metaKey || (!matchMedia('(pointer: coarse)').matches && !e.shiftKey && !e.altKey)) {
      e.preventDefault();
      composeForm.requestSubmit();
    }
  });
  autoGrow(message);
  attachMentions(message, mentionList, () => agent.current?.folder ?? '', () => agent.current?.commands ?? []);
}

async function sendMessage(sent: () => void): Promise<void> {
  const text = message.value.trim();
  if (!text || !agent.current) return;
  const { id } = agent.current;
  sendButton.disabled = true;
  try {
    await agentApi.message(id, text);
    message.value = '';
    fitToText(message);
    sent();
  } catch (err) {
    showToast(messageOf(err));
  } finally {
    sendButton.disabled = false;
  }
}
