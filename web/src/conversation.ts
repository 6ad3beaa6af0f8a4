/**
 * The conversation on screen: its messages and their buttons, the request a turn sends (history,
 * photos within the relay's limits), and the turns themselves: start, keep, resume, retry, stop.
 */
import { app } from './app';
import { titleFrom, type Chat } from './chats';
import { copyText } from './code';
import { canSpeak, speakReply, stopSpeaking } from './voice/speak';
import { el, ui } from './dom';
import { forgetDesktop, onUnauthorized, replyReach } from './connection';
import { DesktopStore } from './desktopChats';
import { refreshList, save } from './library';
import { clearPending, readPending, writePending, type PendingTurn } from './pending';
import { formatMb, MAX_PHOTOS, MAX_REQUEST_BYTES, MAX_REQUEST_PHOTO_BYTES, sentBytes, setPending, type Photo } from './photos';
import { answeringModel } from './providers';
import { assistantMessage, followScroll, markFinished, renderReply, setStatus, userMessage, withoutThinking, type AssistantView, type MessageView } from './render';
import { Turn, type WireMessage } from './turn';
import { fitComposer } from './ui/composer';
import { iconButton, type IconName } from './ui/icons';

/** The relay's limit for a request without photos (server/src/http/request.ts MAX_BODY_BYTES). */
const MAX_TEXT_REQUEST_BYTES = 1024 * 1024;

/**
 * What the provider gets: the chat's system prompt first, then the messages without reasoning.
 * Photos go as image parts, the newest first while the relay's limits allow (8, and 9.5 MiB of
 * base64 per request); older ones are left out.
 */
export function history(c: Chat): WireMessage[] {
  let count = 0;
  let bytes = 0;
  const messages = c.messages
    .slice()
    .reverse()
    .map((m): WireMessage => {
      if (m.role === 'assistant') return { role: m.role, content: withoutThinking(m.content) };
      const images = (m.images ?? []).filter((p) => {
        if (count >= MAX_PHOTOS || bytes + sentBytes(p) > MAX_REQUEST_PHOTO_BYTES) return false;
        count += 1;
        bytes += sentBytes(p);
        return true;
      });
      if (!m.images?.length) return { role: m.role, content: m.content };
      return { role: m.role, content: [{ type: 'text', text: m.content || (images.length ? '' : '(a photo)') }, ...images.map((p) => ({ type: 'image' as const, ...p }))] };
    })
    .reverse();
  const system = c.systemPrompt.trim();
  return system ? [{ role: 'system', content: system }, ...messages] : messages;
}

/**
 * Why the request for this new message would be refused for its size (the relay takes 1 MiB, or
 * 10 MiB when it carries photos), counted as it will be sent; '' when it fits. Said before Send.
 */
export function requestTooLarge(text: string, images: Photo[]): string {
  const { chat, editing } = app;
  const upTo = editing !== null ? chat.messages.slice(0, editing) : chat.messages;
  const trial: Chat = { ...chat, systemPrompt: ui.systemPrompt.value, messages: [...upTo, images.length ? { role: 'user', content: text, images } : { role: 'user', content: text }] };
  const messages = history(trial);
  const size = new TextEncoder().encode(JSON.stringify({ messages })).length;
  const photos = messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image'));
  const limit = photos ? MAX_REQUEST_BYTES : MAX_TEXT_REQUEST_BYTES;
  if (size <= limit) return '';
  const mb = formatMb;
  return `This message is too large to send: ${mb(size)} MB of the ${mb(limit)} MB the desktop takes${photos ? '. Remove a photo, then send it.' : '. Shorten it or start a new chat.'}`;
}

// ---------------------------------------------------------------------------------------------
// A message's own buttons: small icons, each a 44 px target.

function copyIcon(label: string, className: string, text: () => string): HTMLButtonElement {
  const b = iconButton('copy', label, className, () => {
    void copyText(text()).then((ok) => {
      b.title = ok ? 'Copied' : 'Copy failed';
      b.classList.toggle('done', ok);
      setTimeout(() => {
        b.title = label;
        b.classList.remove('done');
      }, 1500);
    });
  });
  return b;
}

function actionIcon(name: IconName, label: string, className: string, run: () => void): HTMLButtonElement {
  return iconButton(name, label, className, run);
}

function userActions(view: MessageView, text: string, index: number): void {
  view.actions.append(copyIcon('Copy message', 'copy-msg', () => text), actionIcon('edit', 'Edit message', 'edit-msg', () => beginEdit(index)));
}

function assistantActions(view: AssistantView, raw: string, model?: string): void {
  view.actions.replaceChildren(copyIcon('Copy reply', 'copy-msg', () => withoutThinking(raw)));
  if (canSpeak()) view.actions.append(speakerButton(raw));
  // Which model wrote it, under the reply (as the desktop named it when the reply was asked for).
  if (model) view.actions.prepend(el('span', 'answered-by', model));
}

/** Reads the reply aloud with the phone's voice; tapped again (or another reply's) it stops. */
function speakerButton(raw: string): HTMLButtonElement {
  const b = actionIcon('speaker', 'Read aloud', 'speak', () => {
    if (b.getAttribute('aria-pressed') === 'true') return stopSpeaking();
    for (const other of ui.log.querySelectorAll('.msg-actions > .speak[aria-pressed="true"]')) other.setAttribute('aria-pressed', 'false');
    b.setAttribute('aria-pressed', 'true');
    void speakReply(raw).then(() => b.setAttribute('aria-pressed', 'false'));
  });
  b.setAttribute('aria-pressed', 'false');
  return b;
}

/** Who hears of each reply's end (read-aloud, hands-free): its text, and whether it finished well. */
const replyEnded = new Set<(raw: string, ok: boolean) => void>();
export function onReplyEnded(run: (raw: string, ok: boolean) => void): () => void {
  replyEnded.add(run);
  return () => replyEnded.delete(run);
}

/** "Regenerate" sits on the last reply, when the chat ends with one and nothing streams. */
export function updateRegenerate(): void {
  for (const b of ui.log.querySelectorAll(':scope > li > .msg-actions > .regen')) b.remove();
  if (app.current || app.chat.messages.at(-1)?.role !== 'assistant') return;
  const li = [...ui.log.children].reverse().find((item) => item.classList.contains('assistant'));
  li?.querySelector(':scope > .msg-actions')?.append(
    actionIcon('regenerate', 'Regenerate reply', 'regen', () => {
      if (app.current || app.chat.messages.at(-1)?.role !== 'assistant') return;
      app.chat.messages.pop();
      li.remove();
      void save(app.chat);
      runTurn(app.chat);
    }),
  );
}

function beginEdit(index: number): void {
  const m = app.chat.messages[index];
  if (app.current || !m) return;
  app.editing = index;
  ui.message.value = m.content;
  setPending(m.images ?? []);
  ui.editing.hidden = false;
  fitComposer();
  ui.message.focus();
}

export function endEdit(): void {
  app.editing = null;
  ui.editing.hidden = true;
}

// ---------------------------------------------------------------------------------------------
// The chat on screen

const SUGGESTIONS = ['Explain a tricky idea in simple words', 'Help me write a short, friendly email', 'Review this code and suggest fixes'];

/** A new chat shows who will answer and a few ways to start, instead of an empty page. */
export function updateEmpty(): void {
  const empty = !app.chat.messages.length && !app.current;
  ui.empty.hidden = !empty;
  ui.chatHeading.textContent = app.chat.title || 'New chat';
  if (!empty) return;
  ui.emptyHost.textContent = app.info?.hostname || 'your computer';
  const model = answeringModel();
  ui.emptyModel.textContent = model ? `${model} will answer` : '';
  if (!ui.suggestions.children.length) {
    ui.suggestions.append(
      ...SUGGESTIONS.map((text) => {
        const li = el('li');
        const b = el('button', 'suggestion', text);
        b.type = 'button';
        b.addEventListener('click', () => {
          ui.message.value = text;
          fitComposer();
          ui.message.focus();
        });
        li.append(b);
        return li;
      }),
    );
  }
}

/** Puts a chat on screen: its messages as they were, replies re-rendered through the sanitiser. */
export function showChat(c: Chat): void {
  app.chat = c;
  endEdit();
  ui.log.replaceChildren();
  ui.systemPrompt.value = c.systemPrompt;
  ui.system.classList.toggle('set', !!c.systemPrompt.trim());
  setStatus('');
  c.messages.forEach((m, i) => {
    if (m.role === 'user') userActions(userMessage(m.content, m.images), m.content, i);
    else {
      const view = assistantMessage();
      view.thinkMs = m.thoughtMs;
      renderReply(view, m.content);
      markFinished(view);
      assistantActions(view, m.content, m.model);
    }
  });
  updateRegenerate();
  updateEmpty();
  followScroll(true);
}

// ---------------------------------------------------------------------------------------------
// Turns

export function startTurn(text: string, images: Photo[] = []): void {
  if (!app.pairing) return;
  const c = app.chat;
  if (!c.messages.length && !c.title) c.title = text ? titleFrom(text) : 'Photo';
  c.messages.push(images.length ? { role: 'user', content: text, images } : { role: 'user', content: text });
  void save(c);
  userActions(userMessage(text, images), text, c.messages.length - 1);
  runTurn(c);
}

/** Streams the reply to the chat as it stands (a new message, a regenerate, an edit), or resumes one from before a reload. */
export function runTurn(c: Chat, resume?: PendingTurn, following?: string): void {
  if (!app.pairing) return;
  followScroll(true);
  const model = answeringModel();
  let keptAt = 0;
  const desktop = app.store instanceof DesktopStore ? app.store : undefined;
  const keep = (turn: Turn) => {
    keptAt = Date.now();
    // A reply the desktop keeps is picked up from there after a reload, not replayed from this phone.
    if (app.store.persistent && !desktop) writePending({ key: turn.key, chatId: c.id, body: turn.body, lastId: turn.lastId, raw: turn.raw, thinkStarted: turn.view.thinkStarted, thinkMs: turn.view.thinkMs });
  };
  const turn = new Turn(app.pairing.token, history(c), {
    finished(t) {
      if (keepCurrent === keepThis) keepCurrent = null;
      const ended = t.state === 'done' || (t.state === 'stopped' && withoutThinking(t.raw));
      // A reply the phone could not reach stays kept: the next page load tries it again.
      if (t.failure?.code === 'network') keep(t);
      else if (!ended) clearPending(t.key);
      if (ended) {
        c.messages.push({ role: 'assistant', content: t.raw, ...(t.view.thinkMs !== undefined ? { thoughtMs: t.view.thinkMs } : {}), ...(model ? { model } : {}) });
        assistantActions(t.view, t.raw, model);
        // A reply the desktop ran is already in its conversation: this phone keeps its copy, and
        // writing the whole chat back would only overwrite a turn another phone started since.
        const saved = desktop ? desktop.keepHere(c).catch(() => undefined).then(refreshList) : save(c);
        // The reply's record goes only once the chat holding it is saved: a reload in between
        // resumes the reply instead of losing it.
        void saved.then(() => clearPending(t.key));
      }
      if (app.current === t) app.current = null;
      if (c === app.chat) updateRegenerate();
      for (const run of [...replyEnded]) run(t.raw, t.state === 'done');
    },
    unauthorized: onUnauthorized,
    pairAgain: forgetDesktop,
    reach: replyReach,
    retry,
    progress(t) {
      // At most twice a second: enough to lose little on a reload, little work per token.
      if (Date.now() - keptAt >= 500) keep(t);
    },
  }, resume, desktop ? { id: following, prepare: () => desktop.flush(c) } : undefined);
  app.current = turn;
  const keepThis = () => keep(turn);
  keepCurrent = keepThis;
  updateEmpty();
  // Always kept (not only with push on): a reload or a tab iOS discarded resumes it.
  keep(turn);
  turn.start();
}

/** Keeps the streaming reply as it stands now (not waiting for the next half second). */
let keepCurrent: (() => void) | null = null;

/** The page is going away (a reload, the app switcher): keep every event received so far. */
export function keepReplyNow(): void {
  keepCurrent?.();
}

/** A page opened after the one that streamed a reply was gone (a reload, a discarded tab, the push notification): that reply resumes. */
export function resumePending(): void {
  const pending = readPending();
  if (!pending || app.current || !app.pairing) return;
  const found = app.chats.find((c) => c.id === pending.chatId);
  if (!found || found.messages.at(-1)?.role !== 'user') return clearPending();
  showChat(structuredClone(found));
  runTurn(app.chat, pending);
}

/** Resend the same request as a new turn (after a failure that could not be resumed). */
function retry(turn: Turn): void {
  if (app.current) return;
  turn.view.li.remove();
  const last = app.chat.messages.at(-1);
  if (!last || last.role !== 'user') return;
  app.chat.messages.pop();
  const prev = ui.log.lastElementChild;
  if (prev && prev.classList.contains('user')) prev.remove();
  startTurn(last.content, last.images);
}

export function stop(): void {
  app.current?.stop();
}

export function maybeResume(): void {
  app.current?.maybeResume();
}

/** Send: a new message, or the edited one (what followed it goes). */
export function sendComposed(text: string, images: Photo[]): boolean {
  if ((!text && !images.length) || app.current || !app.pairing) return false;
  const tooLarge = requestTooLarge(text, images);
  if (tooLarge) {
    ui.attachError.textContent = tooLarge;
    return false;
  }
  app.chat.systemPrompt = ui.systemPrompt.value;
  if (app.editing !== null) {
    app.chat.messages = app.chat.messages.slice(0, app.editing);
    showChat(app.chat);
  }
  // A new message: whatever was being read aloud stops.
  stopSpeaking();
  startTurn(text, images);
  void refreshList();
  return true;
}
