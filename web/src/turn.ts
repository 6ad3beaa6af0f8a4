/**
 * One reply being streamed: the turn's state machine.
 *
 *   streaming ──(connection dropped)──▶ interrupted ──(page visible and online)──▶ streaming
 *       │                                    │
 *       └──────────────┬─────────────────────┘
 *                      ▼
 *            done | stopped | error        (terminal; exactly one)
 *
 * A turn streams over SSE with an Idempotency-Key, so a dropped connection resumes with the same
 * key and the Last-Event-ID of the last event seen; when SSE shows no bytes (a buffering proxy),
 * it switches to the WebSocket, and later turns start there.
 */
import type { ChatEvent, ContentPart, WireMessage } from '../../server/src/protocol';
import { cancelKeyed, newKey, stopConversation } from './api';
import { authMessage, DEVICE_REMOVED_CODE, isRemovalMessage, PHONE_REMOVED_CODE, PHONE_REMOVED_MESSAGE } from './devices';
import { describeFailure, type Failure, type FailureCode } from './failure';
import { assistantMessage, markFinished, renderReply, setCursor, setNote, setStatus, setStreaming, type AssistantView } from './render';
import { settings } from './settings';
import { runConversation, runSse, runWs } from './transports';

/** A request message: the SPEC's string, or text and image parts (issue 13; docs/http-api.md). */
export type { ContentPart, WireMessage };

export type TurnState = 'streaming' | 'interrupted' | 'done' | 'stopped' | 'error';
export type AbortWhy = 'stop' | 'ws' | 'stall';

export interface TurnHooks {
  /** The turn reached a terminal state; `raw` is what was received. */
  finished(turn: Turn): void;
  /** The relay said the token is not (or no longer) valid; `message` says why, for this token. */
  unauthorized(message: string, code: FailureCode): void;
  /** The way back after the desk removed this phone: the pairing screen. */
  pairAgain(): void;
  /** Retry after a failure that could not be resumed. */
  retry(turn: Turn): void;
  /** More of the reply arrived (for keeping it on the phone). */
  progress(turn: Turn): void;
  /** How the way to the desktop looks from this reply: for the header's status dot. */
  reach(state: 'ok' | 'reconnecting' | 'unreachable', why: string): void;
}

/** A reply started by an earlier page: its key, exact body, and what it had received. */
export interface ResumeFrom {
  key: string;
  body: string;
  lastId: number | null;
  raw: string;
  /** When its thinking began (epoch ms), as the earlier page saw it. */
  thinkStarted?: number;
  thinkMs?: number;
}

/** A reply the desktop runs in a conversation it keeps (issue 30): `prepare` writes the chat there and gives its id. */
export interface ConversationTurn {
  id?: string;
  prepare(): Promise<string>;
}

/** Once SSE was seen held back on this network, later turns go straight to the WebSocket. */
let preferWs = false;

export class Turn {
  readonly key: string;
  readonly body: string;
  readonly view: AssistantView;
  state: TurnState = 'streaming';
  transport: 'sse' | 'ws' = preferWs ? 'ws' : 'sse';
  /** Everything received so far (thinking included). */
  raw = '';
  lastId: number | null = null;
  attempts = 0;
  lastByteAt = Date.now();
  /** When the connection was lost (0 while connected): resuming is tried for settings.reconnectForMs from then. */
  private lostAt = 0;
  private watchdog: ReturnType<typeof setInterval> | undefined;
  abort: ((why: AbortWhy) => void) | null = null;
  errorMessage = '';
  /** Why the turn failed, in plain words and as said (set with state 'error'). */
  failure: Failure | null = null;
  private renderTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly token: string,
    messages: WireMessage[],
    private readonly hooks: TurnHooks,
    /** A reply started before this page was loaded (a reload, a discarded tab, a push notification). */
    resume?: ResumeFrom,
    /** Set when the desktop keeps conversations: the reply runs there and is followed from its events. */
    readonly conversation?: ConversationTurn,
  ) {
    this.key = resume?.key ?? newKey();
    this.body = resume?.body ?? JSON.stringify({ messages });
    this.view = assistantMessage();
    if (resume?.lastId) {
      // Show what the earlier page had, and ask the relay only for what came after it.
      this.lastId = resume.lastId;
      this.raw = resume.raw;
      this.view.thinkStarted = resume.thinkStarted;
      this.view.thinkMs = resume.thinkMs;
      this.render();
    }
    setStreaming(true);
  }

  start(): void {
    this.note('');
    setCursor(this.view, true);
    this.watch();
    if (this.conversation) void runConversation(this);
    else if (this.transport === 'ws') runWs(this);
    else runSse(this);
  }

  // --- events from a transport -------------------------------------------------------------

  event(event: ChatEvent): void {
    if (this.state !== 'streaming') return;
    if (event.type === 'token' && typeof event.delta === 'string') {
      this.raw += event.delta;
      this.timeThinking();
      this.renderTimer ??= setTimeout(() => this.render(), settings.renderEveryMs);
    } else if (event.type === 'done') {
      if (typeof event.content === 'string') this.raw = event.content;
      this.finish('done');
    } else if (event.type === 'error') {
      const message = typeof event.message === 'string' ? event.message : 'The desktop reported an error.';
      // The desk removed this phone mid-reply: its token is gone, as after a 401.
      if (isRemovalMessage(message)) this.refused(PHONE_REMOVED_MESSAGE, PHONE_REMOVED_CODE);
      else this.finish('error', message);
    }
  }

  /** "Thought for N s": from the first `<think>` seen to its `</think>`, as the tokens arrive. */
  private timeThinking(): void {
    const v = this.view;
    if (v.thinkMs !== undefined) return;
    if (v.thinkStarted === undefined) {
      if (this.raw.trimStart().startsWith('<think>')) v.thinkStarted = Date.now();
      else return;
    }
    if (this.raw.includes('</think>')) v.thinkMs = Date.now() - v.thinkStarted;
  }

  /**
   * A stream that shows no byte for settings.stallMs is dead even if the socket looks open (the
   * radio went away mid-reply): the header must not stay green. SSE and the conversation's events
   * carry a keep-alive every 15 s; the WebSocket has its own close, so it is not watched.
   */
  private watch(): void {
    clearInterval(this.watchdog);
    this.watchdog = setInterval(() => {
      if (this.state !== 'streaming') return clearInterval(this.watchdog);
      if (this.transport === 'ws' && !this.conversation) return;
      if (this.abort && Date.now() - this.lastByteAt > settings.stallMs) this.abort('stall');
    }, 1000);
  }

  /** The phone says it went offline: the stream cannot be alive; resume once it is back. */
  offline(): void {
    if (this.state === 'streaming' && this.abort && (this.transport === 'sse' || this.conversation)) this.abort('stall');
  }

  /** Bytes arrived from the relay: it is reachable. */
  reached(): void {
    this.lostAt = 0;
    this.hooks.reach('ok', '');
  }

  /** SSE was held back: leave its generation and go on over the WebSocket. */
  switchToWs(): void {
    cancelKeyed(this.token, this.key);
    preferWs = true;
    this.transport = 'ws';
    setStatus('The network holds back streamed replies; switching to a WebSocket…');
    runWs(this);
  }

  /** A 401 (its code, e.g. `auth.device_removed`): worded for what happened to this phone. */
  unauthorized(authCode = ''): void {
    const removed = authCode === DEVICE_REMOVED_CODE;
    this.refused(authMessage(this.token, authCode), removed ? PHONE_REMOVED_CODE : authCode || 'auth.invalid_token');
  }

  private refused(message: string, code: FailureCode): void {
    this.hooks.unauthorized(message, code);
    this.finish('error', message, code);
  }

  /** A terminal event (or a failure before the stream) ends the turn. */
  finish(state: 'done' | 'stopped' | 'error', message = '', code: FailureCode = ''): void {
    if (this.state !== 'streaming' && this.state !== 'interrupted') return;
    this.state = state;
    this.abort = null;
    clearInterval(this.watchdog);
    this.render();
    markFinished(this.view);
    if (state === 'done') this.note('');
    else if (state === 'stopped') this.note('Stopped.');
    else {
      this.errorMessage = message || 'The reply failed.';
      this.failure = describeFailure(this.errorMessage, code);
      if (code === 'network') this.hooks.reach('unreachable', this.failure.plain);
      this.view.li.classList.add('failed');
      const interrupted = code === 'network' || code === 'dropped';
      setNote(this.view, this.failure.plain, 'error', {
        title: interrupted ? 'Reply interrupted' : '',
        retry: this.failure.retry ? () => this.hooks.retry(this) : undefined,
        pairAgain: this.failure.code === PHONE_REMOVED_CODE ? () => this.hooks.pairAgain() : undefined,
        details: this.failure.raw !== this.failure.plain ? this.failure.raw : '',
      });
    }
    setStreaming(false);
    setStatus('');
    this.hooks.finished(this);
  }

  /** The connection dropped before the terminal event: wait for a chance to resume. */
  interrupted(): void {
    if (this.state !== 'streaming') return;
    this.abort = null;
    setStatus('');
    this.lostAt ||= Date.now();
    // Tried by itself for a while, however many times the network refuses (a phone between cells);
    // only then is the desktop said to be unreachable, with Retry.
    if (Date.now() - this.lostAt >= settings.reconnectForMs) {
      this.finish('error', 'The connection to the desktop keeps dropping (or the desktop cannot be reached).', 'network');
      return;
    }
    this.state = 'interrupted';
    this.hooks.reach('reconnecting', '');
    // A reply waiting to resume is not being written: no cursor until it is.
    setCursor(this.view, false);
    if (document.visibilityState === 'visible' && navigator.onLine !== false) {
      // Visible and online: it resumes by itself in a moment; waiting for "visible" would be wrong.
      this.note('Connection lost; reconnecting…');
      setTimeout(() => this.maybeResume(), Math.min(250 * 2 ** Math.max(0, this.attempts - 1), 4000));
    } else {
      this.note('Connection lost; the reply will resume when the page is visible and online.');
    }
  }

  /** The socket closed after it opened, before the terminal event (a socket cannot resume). */
  lost(): void {
    this.finish('error', 'The connection to the desktop was lost before the reply finished.', 'dropped');
  }

  // --- from the page -----------------------------------------------------------------------

  /** Resume the cut stream: same request, same Idempotency-Key, `Last-Event-ID` of the last event seen. */
  maybeResume(): void {
    if (document.visibilityState !== 'visible' || navigator.onLine === false) return;
    if (this.state === 'streaming') {
      // A stream that has been silent for longer than the keep-alive interval is dead (the phone slept).
      if (this.abort && Date.now() - this.lastByteAt > settings.stallMs) this.abort('stall');
      return;
    }
    if (this.state !== 'interrupted') return;
    this.state = 'streaming';
    this.start();
  }

  stop(): void {
    const abort = this.abort;
    this.finish('stopped');
    abort?.('stop');
    if (this.conversation?.id) stopConversation(this.token, this.conversation.id);
    else if (this.transport === 'sse') cancelKeyed(this.token, this.key);
  }

  private render(): void {
    clearTimeout(this.renderTimer);
    this.renderTimer = undefined;
    renderReply(this.view, this.raw, this.state === 'streaming' || this.state === 'interrupted');
    if (this.state === 'streaming' || this.state === 'interrupted') this.hooks.progress(this);
  }

  private note(text: string, kind = ''): void {
    setNote(this.view, text, kind);
  }
}
