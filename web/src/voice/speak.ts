/**
 * Reading replies aloud with the phone's own voice (`speechSynthesis`): nothing leaves the phone.
 * What is read is the answer as a person would read it: Markdown as text, code blocks and the
 * model's `<think>` section left out.
 */
import { renderMarkdown, withoutThinking } from '../render';

/** Utterances longer than this stop early on some engines (Chrome on Android cuts at ~15 s), so a reply is queued in pieces. */
const MAX_PIECE = 220;
const BLOCKS = 'p, li, h1, h2, h3, h4, h5, h6, blockquote, tr, dt, dd, br, hr, table';

/** The reply as plain text to read: no thinking, no code blocks, Markdown rendered and read as its text. */
export function speakableText(raw: string): string {
  // Parsed in an inert document (DOMParser runs nothing and loads nothing), from the sanitised markup.
  const doc = new DOMParser().parseFromString(renderMarkdown(withoutThinking(raw)), 'text/html');
  for (const pre of doc.querySelectorAll('pre')) pre.remove();
  for (const block of doc.querySelectorAll(BLOCKS)) block.append(doc.createTextNode('\n'));
  return (doc.body.textContent ?? '')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join('\n');
}

/** The text in pieces of at most MAX_PIECE characters, cut after a sentence or line where it can be. */
export function speechPieces(text: string): string[] {
  const pieces: string[] = [];
  for (const line of text.split('\n')) {
    let rest = line;
    while (rest.length > MAX_PIECE) {
      const window = rest.slice(0, MAX_PIECE);
      const cut = Math.max(window.lastIndexOf('. '), window.lastIndexOf('! '), window.lastIndexOf('? '), window.lastIndexOf('; '), window.lastIndexOf(', '));
      const at = cut > MAX_PIECE / 3 ? cut + 1 : window.lastIndexOf(' ') > 0 ? window.lastIndexOf(' ') : MAX_PIECE;
      pieces.push(rest.slice(0, at).trim());
      rest = rest.slice(at).trim();
    }
    if (rest) pieces.push(rest);
  }
  return pieces;
}

export const canSpeak = (): boolean => typeof speechSynthesis !== 'undefined' && typeof SpeechSynthesisUtterance !== 'undefined';

let generation = 0;
const listeners = new Set<(speaking: boolean) => void>();

/** Called with true when reading starts and false when it ends or is stopped (the speaker buttons follow it). */
export function onSpeaking(run: (speaking: boolean) => void): () => void {
  listeners.add(run);
  return () => listeners.delete(run);
}

let speakingNow = false;
function setSpeaking(on: boolean): void {
  if (speakingNow === on) return;
  speakingNow = on;
  for (const run of listeners) run(on);
}

export const isSpeaking = (): boolean => speakingNow;

/**
 * Reads a reply aloud, replacing whatever was being read. Resolves when it has been read, or
 * was stopped (false then).
 */
export function speakReply(raw: string): Promise<boolean> {
  stopSpeaking();
  const pieces = speechPieces(speakableText(raw));
  if (!canSpeak() || !pieces.length) return Promise.resolve(pieces.length === 0);
  const mine = ++generation;
  setSpeaking(true);
  return new Promise((resolve) => {
    let left = pieces.length;
    const done = (ok: boolean) => {
      if (mine !== generation) return resolve(false);
      if (!ok || --left === 0) {
        generation++;
        setSpeaking(false);
        resolve(ok);
      }
    };
    for (const piece of pieces) {
      const u = new SpeechSynthesisUtterance(piece);
      u.lang = document.documentElement.lang || navigator.language;
      u.onend = () => done(true);
      // `interrupted`/`canceled` come from our own cancel(); anything else ends the reading too.
      u.onerror = () => done(false);
      speechSynthesis.speak(u);
    }
  });
}

/** Stops reading at once (a new message was sent, the button tapped again). */
export function stopSpeaking(): void {
  if (!speakingNow) return;
  generation++;
  setSpeaking(false);
  if (canSpeak()) speechSynthesis.cancel();
}
