/**
 * Voice on the chat screen (issue 29, docs/voice.md): the composer's microphone, the two
 * settings (send voice messages at once, read replies aloud), and hands-free conversation.
 */
import { app } from './app';
import { onReplyEnded, sendComposed } from './conversation';
import { ui } from './dom';
import { setPending } from './photos';
import { desktopTranscribes } from './providers';
import { localStore } from './storage';
import { fitComposer } from './ui/composer';
import { Mic } from './ui/mic';
import { Conversation } from './voice/handsfree';
import { canSpeak, speakReply } from './voice/speak';

const SEND_AT_ONCE_KEY = 'deskrelay.voiceSendAtOnce';
const READ_ALOUD_KEY = 'deskrelay.readAloud';

let mic: Mic | undefined;
let talk: Conversation | undefined;

/** Sends the composer's text as it stands, as Send does; false when it could not go. */
function sendBox(): boolean {
  const text = ui.message.value.trim();
  if (!sendComposed(text, [])) return false;
  ui.message.value = '';
  setPending([]);
  fitComposer();
  return true;
}

/** Hands-free: the text as the next message; resolves with the reply once it ended (null: it failed, or could not be sent). */
function sendAndWait(text: string): Promise<string | null> {
  ui.message.value = text;
  return new Promise((resolve) => {
    const off = onReplyEnded((raw, ok) => {
      off();
      resolve(ok ? raw : null);
    });
    if (!sendBox()) {
      off();
      resolve(null);
    }
  });
}

/**
 * A voice setting's checkbox, kept in storage. The checkboxes are the shell's: Settings shows
 * them before this module has loaded (seconds on a slow phone), so one the user changed meanwhile
 * (it is no longer as the page drew it) keeps that choice, rather than the stored one
 * silently putting it back.
 */
function keptSetting(box: HTMLInputElement, key: string): void {
  if (box.checked !== box.defaultChecked) localStore.write(key, box.checked);
  else box.checked = localStore.read(key) === true;
  box.addEventListener('change', () => localStore.write(key, box.checked));
}

export function initVoice(): void {
  const m = (mic = new Mic({
    token: () => app.pairing?.token ?? null,
    desktopTranscribes,
    heard(text) {
      // After what is already typed, so dictation adds to a draft rather than replacing it.
      const before = ui.message.value.trimEnd();
      ui.message.value = before ? `${before} ${text}` : text;
      fitComposer();
      if (ui.voiceSendAtOnce.checked && !app.current) sendBox();
      else ui.message.focus();
    },
    say(text) {
      ui.attachError.textContent = text;
    },
  }));
  talk = new Conversation({ mic: m, send: sendAndWait });
  ui.attach.after(m.button);
  ui.send.after(talk.button);
  ui.compose.querySelector('.composer')?.before(m.note, m.panel, talk.panel);

  keptSetting(ui.voiceSendAtOnce, SEND_AT_ONCE_KEY);
  keptSetting(ui.readAloud, READ_ALOUD_KEY);
  ui.readAloudRow.hidden = !canSpeak();
  onReplyEnded((raw, ok) => {
    // Hands-free reads its own replies, in its own order.
    if (ok && ui.readAloud.checked && !talk?.on) void speakReply(raw);
  });
  refreshVoice();
}

/** After each GET /v1/providers: the microphone (and hands-free) only when something can hear. */
export function refreshVoice(): void {
  mic?.refresh();
  talk?.refresh();
}
