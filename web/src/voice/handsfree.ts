/**
 * Hands-free conversation (issue 29): one tap starts it; then listen → send at the first pause →
 * read the reply aloud → listen again, until it is tapped off. Large targets, and the screen is
 * kept on (Screen Wake Lock) while it runs, so the phone can lie on the table.
 */
import { el } from '../dom';
import { iconButton } from '../ui/icons';
import type { Mic } from '../ui/mic';
import { speakReply, stopSpeaking } from './speak';

/** Quiet after speech that ends an utterance. */
const PAUSE_MS = 1400;

export interface ConversationOptions {
  mic: Mic;
  /** Sends the text as the next message; resolves with the reply when it has finished, null when it failed or was stopped. */
  send(text: string): Promise<string | null>;
}

interface WakeLockSentinelLike {
  release(): Promise<void>;
}

export class Conversation {
  /** The composer's toggle. */
  readonly button: HTMLButtonElement;
  /** While on: the whole bottom of the screen, one large target that ends it. */
  readonly panel: HTMLDivElement;
  private readonly state: HTMLParagraphElement;
  private running = false;
  private wake: WakeLockSentinelLike | undefined;

  constructor(private readonly o: ConversationOptions) {
    this.button = iconButton('wave', 'Conversation mode', 'talk', () => (this.running ? this.end() : void this.start()));
    this.button.setAttribute('aria-pressed', 'false');
    this.panel = el('div', 'talk-panel');
    this.panel.hidden = true;
    this.state = el('p', 'talk-state', 'Listening…');
    this.state.setAttribute('role', 'status');
    this.state.setAttribute('aria-live', 'polite');
    const end = el('button', 'talk-end', 'End conversation');
    end.type = 'button';
    end.addEventListener('click', () => this.end());
    this.panel.append(this.state, end);
  }

  get on(): boolean {
    return this.running;
  }

  /** Shown only when the microphone is. */
  refresh(): void {
    this.button.hidden = this.o.mic.button.hidden;
    if (this.button.hidden && this.running) this.end();
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.button.setAttribute('aria-pressed', 'true');
    this.panel.hidden = false;
    void this.keepScreenOn();
    while (this.running) {
      this.show('Listening…');
      const text = await this.o.mic.hear(PAUSE_MS);
      if (!this.running) break;
      if (!text) {
        if (this.o.mic.lastError) break;
        continue;
      }
      this.show(`“${text}”`);
      const reply = await this.o.send(text);
      if (!this.running || reply === null) break;
      this.show('Speaking… (tap to end)');
      await speakReply(reply);
    }
    this.end();
  }

  /** Off: stops listening and speaking; a reply still streaming goes on and stays in the chat. */
  end(): void {
    if (!this.running) return;
    this.running = false;
    this.button.setAttribute('aria-pressed', 'false');
    this.panel.hidden = true;
    this.o.mic.cancel();
    stopSpeaking();
    void this.wake?.release().catch(() => undefined);
    this.wake = undefined;
  }

  private show(text: string): void {
    this.state.textContent = text;
  }

  private async keepScreenOn(): Promise<void> {
    const lock = (navigator as Navigator & { wakeLock?: { request(type: 'screen'): Promise<WakeLockSentinelLike> } }).wakeLock;
    try {
      const sentinel = await lock?.request('screen');
      if (this.running) this.wake = sentinel;
      else void sentinel?.release();
    } catch {
      /* not allowed (battery saver, no user gesture): the screen follows its own timeout */
    }
  }
}
