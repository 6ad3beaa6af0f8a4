/**
 * Rendering. Model output is untrusted: Markdown → HTML → DOMPurify (markdown.ts), and
 * nothing else of the model's ever becomes markup. Everything else is built with textContent.
 */
import { decorateCode } from './code';
import { el, scroller, ui } from './dom';
import { renderMarkdown } from './markdown';
import { focusableScrollers } from './wide';
import { photoUrl, type Photo } from './photos';

export { renderMarkdown };

export interface ThinkingSplit {
  thinking: string;
  answer: string;
  /** The `<think>` segment has not ended yet. */
  open: boolean;
  hasThinking: boolean;
}

/** Splits a reply into its leading `<think>` segment (if any) and the answer. */
export function splitThinking(raw: string): ThinkingSplit {
  const lead = raw.trimStart();
  if (!lead.startsWith('<think>')) {
    // A reply that so far is only a prefix of "<think>" may still become one.
    if (lead && '<think>'.startsWith(lead)) return { thinking: '', answer: '', open: false, hasThinking: false };
    return { thinking: '', answer: raw, open: false, hasThinking: false };
  }
  const rest = lead.slice('<think>'.length);
  const end = rest.indexOf('</think>');
  if (end < 0) return { thinking: rest, answer: '', open: true, hasThinking: true };
  return { thinking: rest.slice(0, end), answer: rest.slice(end + '</think>'.length).replace(/^\s+/, ''), open: false, hasThinking: true };
}

/** What goes back to the model as history: the answer without its reasoning. */
export function withoutThinking(raw: string): string {
  return splitThinking(raw).answer;
}

// ---------------------------------------------------------------------------------------------
// Scrolling: follow the reply while the reader is at the bottom; stop following once they
// scroll up, and follow again when they come back down (or send).

let following = true;
/** Where our own last scroll to the end landed: a scroll event elsewhere is the reader's. */
let ourTop = -1;
let streaming = false;

/** ↓ over the composer while a reply streams and the reader has scrolled up: back to the end, following again. */
const jump = el('button', 'jump', '↓');
jump.id = 'jump-latest';
jump.type = 'button';
jump.hidden = true;
jump.setAttribute('aria-label', 'Jump to the latest');
jump.addEventListener('click', () => followScroll(true));
ui.compose.prepend(jump);
const showJump = () => (jump.hidden = following || !streaming);

export function followScroll(on = true): void {
  following = on;
  if (on) scrollToEnd();
  showJump();
}

export function scrollToEnd(): void {
  if (!following) return;
  scroller.scrollTop = scroller.scrollHeight;
  ourTop = scroller.scrollTop;
}

window.addEventListener(
  'scroll',
  () => {
    // Judged by position, not by timing: a reader who scrolls up in the same frame as a token
    // arrives must not be pulled back down.
    if (scroller.scrollTop === ourTop) return;
    following = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
    showJump();
  },
  { passive: true },
);
// A wheel turned up is the reader leaving the bottom, even before the page has moved.
window.addEventListener('wheel', (e) => {
  if (e.deltaY < 0) following = false;
  showJump();
}, { passive: true });

// ---------------------------------------------------------------------------------------------
// Messages

export interface MessageView {
  li: HTMLLIElement;
  /** The message's own buttons (copy, edit, regenerate), filled by the caller. */
  actions: HTMLDivElement;
}

export interface AssistantView extends MessageView {
  details: HTMLDetailsElement;
  summary: HTMLElement;
  /** When the thinking began on this page, and how long it took once it ended. */
  thinkStarted?: number;
  thinkMs?: number;
  thinkTimer?: ReturnType<typeof setInterval>;
  thinkingText: HTMLDivElement;
  reply: HTMLDivElement;
  note: HTMLParagraphElement;
}

/**
 * A chat log entry. No visible speaker line (the bubble's side says who): screen readers get it
 * as hidden text.
 */
function messageItem(kind: 'user' | 'assistant', name: string): MessageView {
  const li = el('li', `msg ${kind}`);
  li.append(el('span', 'visually-hidden', name));
  const actions = el('div', 'msg-actions');
  return { li, actions };
}

/** The user's own message: their words and photos (the chat's stored copies, as `data:` URLs). */
export function userMessage(text: string, photos: readonly Photo[] = []): MessageView {
  const view = messageItem('user', 'You said:');
  if (photos.length) {
    const box = el('div', 'photos');
    for (const p of photos) {
      const img = el('img');
      img.src = photoUrl(p);
      img.alt = 'Photo';
      box.append(img);
    }
    view.li.append(box);
  }
  view.li.append(el('div', 'text', text), view.actions);
  ui.log.append(view.li);
  scrollToEnd();
  return view;
}

export function assistantMessage(): AssistantView {
  const view = messageItem('assistant', 'Reply:');
  const details = el('details', 'thinking');
  details.hidden = true;
  const summary = el('summary', '', 'Thoughts');
  const thinkingText = el('div', 'thinking-text');
  details.append(summary, thinkingText);
  const reply = el('div', 'reply cursor');
  reply.setAttribute('aria-live', 'polite');
  reply.setAttribute('aria-busy', 'true');
  const note = el('p', 'note');
  // "Reconnecting…", "Stopped.", a failure with Retry: said to a screen reader as it changes.
  note.setAttribute('aria-live', 'polite');
  note.hidden = true;
  view.li.append(details, reply, note, view.actions);
  ui.log.append(view.li);
  scrollToEnd();
  return { ...view, details, summary, thinkingText, reply, note };
}

/** "Thought for 4 s" (rounded up: a blink of thinking is 1 s, not 0). */
const thoughtFor = (ms: number) => `Thought for ${Math.max(1, Math.round(ms / 1000))} s`;

function thinkingSummary(v: AssistantView, open: boolean): void {
  if (open) {
    // A live timer while the model thinks.
    v.thinkStarted ??= Date.now();
    const tick = () => (v.summary.textContent = `Thinking… ${Math.floor((Date.now() - v.thinkStarted!) / 1000)} s`);
    if (!v.thinkTimer) {
      tick();
      v.thinkTimer = setInterval(tick, 1000);
    }
    return;
  }
  clearInterval(v.thinkTimer);
  v.thinkTimer = undefined;
  if (v.thinkStarted !== undefined) v.thinkMs ??= Date.now() - v.thinkStarted;
  v.summary.textContent = v.thinkMs !== undefined ? thoughtFor(v.thinkMs) : 'Thoughts';
}

/**
 * While a reply streams, a bold or code span that has opened but not yet closed would show its
 * raw `**` or backtick: close it for the rendering (the text itself is left as it is).
 */
export function closeOpenSpans(text: string): string {
  const fences = text.match(/^\s*(```|~~~)/gm)?.length ?? 0;
  if (fences % 2 === 1) return text; // inside a code block: Markdown shows it as code already
  const prose = text.replace(/(```|~~~)[\s\S]*?\1/g, '');
  const tickOpen = (prose.match(/`/g)?.length ?? 0) % 2 === 1;
  const outsideCode = prose.replace(/`[^`]*`?/g, '');
  const closers: string[] = [];
  if ((outsideCode.match(/\*\*/g)?.length ?? 0) % 2 === 1) closers.push('**');
  else if ((outsideCode.match(/__/g)?.length ?? 0) % 2 === 1) closers.push('__');
  if (tickOpen) closers.push('`');
  if (!closers.length) return text;
  // A span opened with nothing in it yet shows nothing, rather than an empty bold.
  const trailing = /(\*\*|__|`)\s*$/;
  if (trailing.test(text)) return text.replace(trailing, '');
  return text + closers.reverse().join('');
}

/** Shows `raw` (thinking folded, answer as sanitised Markdown) in an assistant message. */
export function renderReply(v: AssistantView, raw: string, streaming = false): void {
  const { thinking, answer, open, hasThinking } = splitThinking(raw);
  if (hasThinking) {
    v.details.hidden = false;
    thinkingSummary(v, open && streaming);
    v.thinkingText.textContent = thinking.trim();
  }
  v.reply.innerHTML = renderMarkdown(streaming ? closeOpenSpans(answer) : answer);
  focusableScrollers(v.reply);
  scrollToEnd();
}

/** The reply is complete: no cursor, not busy, its code blocks get Copy buttons and highlighting. */
export function markFinished(v: AssistantView): void {
  v.reply.classList.remove('cursor');
  v.reply.setAttribute('aria-busy', 'false');
  clearInterval(v.thinkTimer);
  v.thinkTimer = undefined;
  decorateCode(v.reply);
}

export interface NoteExtras {
  title?: string;
  retry?: () => void;
  /** The desk removed this phone: the way back is pairing again. */
  pairAgain?: () => void;
  details?: string;
}

export function setNote(v: AssistantView, text: string, kind = '', extras: NoteExtras = {}): void {
  const note = v.note;
  note.replaceChildren();
  note.hidden = !text;
  note.className = `note ${kind}`.trim();
  if (!text) return;
  if (extras.title) note.append(el('strong', 'note-title', extras.title), ' ');
  note.append(el('span', 'note-text', text));
  if (extras.retry) {
    const b = el('button', 'retry', 'Retry');
    b.type = 'button';
    b.addEventListener('click', extras.retry);
    note.append(b);
  }
  if (extras.pairAgain) {
    const b = el('button', 'pair-again', 'Pair again');
    b.type = 'button';
    b.addEventListener('click', extras.pairAgain);
    note.append(b);
  }
  if (extras.details) {
    const d = el('details', 'note-details');
    d.append(el('summary', '', 'Details'), el('code', '', extras.details));
    note.append(d);
  }
}

/** The blinking cursor shows a reply being written, and only that. */
export function setCursor(v: AssistantView, on: boolean): void {
  v.reply.classList.toggle('cursor', on);
}

export function setStatus(text: string): void {
  ui.chatStatus.textContent = text;
}

export function setStreaming(on: boolean): void {
  // One place for Send and Stop: the arrow becomes a square while a reply streams.
  ui.stop.hidden = !on;
  ui.send.hidden = on;
  ui.send.disabled = on;
  ui.newChat.disabled = on;
  streaming = on;
  showJump();
}
