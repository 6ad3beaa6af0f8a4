/**
 * The microphone of a composer (the chat's, and the agent's later): a button that turns speech
 * into text in the composer's box. Where the desktop has a transcriber it records (a level meter
 * and a timer while it does) and uploads on Stop; otherwise the browser's own recogniser, after
 * saying once that the browser's maker hears the audio; with neither, the button is not shown.
 */
import { el } from '../dom';
import { localStore } from '../storage';
import { canRecognise, listen, type Listening } from '../voice/recognizer';
import { canRecord, Recording } from '../voice/recorder';
import { transcribe } from '../voice/transcribe';
import { icon, iconButton } from './icons';

const VENDOR_NOTE_KEY = 'deskrelay.voiceVendorNoteSeen';

export type MicMode = 'desktop' | 'browser' | null;

export interface MicOptions {
  /** The pairing token, for the upload. */
  token(): string | null;
  /** The desktop transcribes (`transcription` in GET /v1/providers). */
  desktopTranscribes(): boolean;
  /** The words, heard by a tap on the button: the composer puts them in its box (or sends them). */
  heard(text: string): void;
  /** A failure or a note for the person, in plain words ('' clears it). */
  say(text: string): void;
}

/** `m:ss` */
const clock = (seconds: number) => `${Math.floor(seconds / 60)}:${String(Math.floor(seconds % 60)).padStart(2, '0')}`;

export class Mic {
  readonly button: HTMLButtonElement;
  /** Shown while it records or listens: what it is doing, a level meter, a timer, Cancel and Done. */
  readonly panel: HTMLDivElement;
  /** The one-time note about the browser's recogniser. */
  readonly note: HTMLParagraphElement;
  private readonly bar: HTMLDivElement;
  private readonly time: HTMLSpanElement;
  private readonly label: HTMLSpanElement;
  private recording: Recording | undefined;
  private listening: Listening | undefined;
  private ending: ((keep: boolean) => void) | undefined;
  private busy = false;
  /** Why the last hear() gave nothing, when it failed (hands-free ends then rather than retry forever). */
  lastError = '';

  constructor(private readonly o: MicOptions) {
    this.button = iconButton('mic', 'Voice message', 'mic', () => void this.toggle());
    this.button.hidden = true;
    this.button.setAttribute('aria-pressed', 'false');
    this.panel = el('div', 'mic-panel');
    this.panel.hidden = true;
    this.panel.setAttribute('role', 'group');
    this.panel.setAttribute('aria-label', 'Recording');
    this.label = el('span', 'mic-label', 'Recording');
    this.label.setAttribute('aria-live', 'polite');
    const meter = el('div', 'mic-meter');
    meter.setAttribute('aria-hidden', 'true');
    this.bar = el('div', 'mic-level');
    meter.append(this.bar);
    this.time = el('span', 'mic-time', '0:00');
    this.time.setAttribute('role', 'timer');
    const cancel = el('button', 'mic-cancel', 'Cancel');
    cancel.type = 'button';
    cancel.addEventListener('click', () => this.cancel());
    const done = el('button', 'primary mic-stop');
    done.type = 'button';
    done.setAttribute('aria-label', 'Stop recording');
    done.append(icon('check'), el('span', '', 'Done'));
    done.addEventListener('click', () => this.finish());
    this.panel.append(el('span', 'mic-dot'), this.label, meter, this.time, cancel, done);
    this.note = el('p', 'mic-note');
    this.note.hidden = true;
  }

  /** Where the words come from now. */
  mode(): MicMode {
    if (this.o.desktopTranscribes() && canRecord()) return 'desktop';
    return canRecognise() ? 'browser' : null;
  }

  /** Shows the button when there is a way to hear (call after each GET /v1/providers). */
  refresh(): void {
    const mode = this.mode();
    this.button.hidden = mode === null;
    this.button.title = mode === 'browser' ? "Voice message (your browser's speech recognition)" : 'Voice message';
  }

  get active(): boolean {
    return !!this.recording || !!this.listening || this.busy;
  }

  private async toggle(): Promise<void> {
    if (this.recording || this.listening) return this.finish();
    if (this.busy) return;
    const text = await this.hear();
    if (text) this.o.heard(text);
  }

  /**
   * One utterance: recorded and transcribed on the desktop, or heard by the browser. Resolves
   * with the text ('' when nothing was said, it was cancelled, or it failed: then `say` told why).
   * With `pauseMs`, it ends by itself at the first pause after speech (hands-free).
   */
  async hear(pauseMs?: number): Promise<string> {
    const mode = this.mode();
    if (!mode || this.active) return '';
    this.o.say('');
    this.lastError = '';
    if (mode === 'browser' && !(await this.vendorNoteAccepted())) {
      this.lastError = 'declined';
      return '';
    }
    this.open(mode === 'desktop' ? 'Recording' : 'Listening');
    try {
      return mode === 'desktop' ? await this.record(pauseMs) : await this.recognise();
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
      this.o.say(this.lastError);
      return '';
    } finally {
      this.close();
    }
  }

  /** Stops and uses what was heard. */
  finish(): void {
    if (this.listening) return this.listening.stop();
    this.ending?.(true);
  }

  /** Stops and drops what was heard. */
  cancel(): void {
    if (this.listening) {
      this.ending?.(false);
      return this.listening.abort();
    }
    this.ending?.(false);
  }

  private async record(pauseMs?: number): Promise<string> {
    const r = new Recording({
      level: (level, seconds) => {
        this.bar.style.transform = `scaleX(${Math.max(0.02, level).toFixed(3)})`;
        this.time.textContent = clock(seconds);
      },
      ...(pauseMs ? { pauseMs, pause: () => this.finish() } : {}),
    });
    const ended = new Promise<boolean>((resolve) => (this.ending = resolve));
    try {
      await r.start();
    } catch (err) {
      this.ending = undefined;
      r.cancel();
      throw new Error(micRefusal(err));
    }
    this.recording = r;
    const keep = await ended;
    this.ending = undefined;
    this.recording = undefined;
    if (!keep) {
      r.cancel();
      return '';
    }
    const audio = await r.stop();
    // Stopped before the microphone gave a sound (at once after the tap): said, not dropped unseen.
    if (!audio.size) throw new Error('Nothing was recorded. Hold on a moment longer before you stop.');
    const token = this.o.token();
    if (!token) return '';
    this.busy = true;
    this.label.textContent = 'Transcribing…';
    this.panel.classList.add('sending');
    try {
      return (await transcribe(audio, token)).trim();
    } finally {
      this.busy = false;
    }
  }

  private async recognise(): Promise<string> {
    let keep = true;
    this.ending = (k) => (keep = k);
    const started = performance.now();
    const timer = setInterval(() => (this.time.textContent = clock((performance.now() - started) / 1000)), 250);
    const listening = listen((words) => {
      this.label.textContent = words || 'Listening';
      this.bar.style.transform = `scaleX(${words ? 0.6 : 0.1})`;
    });
    this.listening = listening;
    try {
      const text = await listening.done;
      return keep ? text : '';
    } finally {
      clearInterval(timer);
      this.listening = undefined;
      this.ending = undefined;
    }
  }

  /** The browser's recogniser sends the audio to its maker: said once, before the first use. */
  private vendorNoteAccepted(): Promise<boolean> {
    if (localStore.read(VENDOR_NOTE_KEY) === true) return Promise.resolve(true);
    return new Promise((resolve) => {
      const ok = el('button', 'primary', 'Continue');
      ok.type = 'button';
      const no = el('button', '', 'Not now');
      no.type = 'button';
      const answer = (yes: boolean) => {
        this.note.hidden = true;
        if (yes) localStore.write(VENDOR_NOTE_KEY, true);
        resolve(yes);
      };
      ok.addEventListener('click', () => answer(true));
      no.addEventListener('click', () => answer(false));
      this.note.replaceChildren(
        el('span', '', "Your browser's speech recognition sends the audio to the browser's maker (Google for Chrome, Apple for Safari) to turn it into text: the desktop has no transcriber set. "),
        no,
        ok,
      );
      this.note.hidden = false;
      ok.focus();
    });
  }

  private open(label: string): void {
    this.label.textContent = label;
    this.time.textContent = '0:00';
    this.bar.style.transform = 'scaleX(0.02)';
    this.panel.classList.remove('sending');
    this.panel.hidden = false;
    this.button.setAttribute('aria-pressed', 'true');
  }

  private close(): void {
    this.panel.hidden = true;
    this.button.setAttribute('aria-pressed', 'false');
  }
}

/** Why the microphone could not be opened, in plain words. */
function micRefusal(err: unknown): string {
  const name = err instanceof DOMException ? err.name : '';
  if (name === 'NotAllowedError' || name === 'SecurityError') return 'The browser was not allowed to use the microphone. Allow it in the site settings, then try again.';
  if (name === 'NotFoundError' || name === 'OverconstrainedError') return 'This phone has no microphone the browser can use.';
  if (name === 'NotReadableError') return 'The microphone is in use by another app.';
  return 'The microphone could not be opened.';
}
