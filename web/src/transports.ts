/**
 * The two ways a turn's reply travels: resumable SSE over fetch (the default) and the WebSocket
 * (when a proxy holds streamed responses back). Both feed the turn's events to `turn.event`.
 */
import type { ChatEvent, ConversationEvent, ReplyStarted } from '../../server/src/protocol';
import { CONVERSATION_PATHS } from '../../server/src/protocol/conversations';
import { CHAT_PATHS, HEADERS, pathTo, SOCKET_BEARER_PREFIX, SOCKET_CLOSE, SOCKET_PROTOCOL } from '../../server/src/protocol/paths';
import { apiError, bearer, isDroppedConnection } from './api';
import { setStatus } from './render';
import { settings } from './settings';
import { sseParser } from './sse';
import type { AbortWhy, Turn } from './turn';

function parseEvent(data: string): ChatEvent | null {
  try {
    const value = JSON.parse(data) as unknown;
    return value && typeof value === 'object' ? (value as ChatEvent) : null;
  } catch {
    return null;
  }
}

export async function runSse(turn: Turn): Promise<void> {
  const controller = new AbortController();
  let why: AbortWhy | null = null;
  turn.abort = (reason) => {
    why = reason;
    controller.abort();
  };
  turn.attempts += 1;
  let gotBytes = false;
  const resuming = turn.lastId !== null;
  const wsTimer =
    !resuming && settings.wsAfterMs > 0 && 'WebSocket' in window
      ? setTimeout(() => {
          if (!gotBytes && turn.state === 'streaming') turn.abort?.('ws');
        }, settings.wsAfterMs)
      : undefined;
  const headers: Record<string, string> = {
    ...bearer(turn.token),
    'Content-Type': 'application/json',
    Accept: 'text/event-stream',
    [HEADERS.idempotencyKey]: turn.key,
  };
  if (resuming) headers[HEADERS.lastEventId] = String(turn.lastId);
  else turn.raw = ''; // a fresh start (or a server that could not resume) replays from the beginning

  setStatus(resuming ? 'Resuming the reply…' : 'Waiting for the desktop…');
  turn.lastByteAt = Date.now();
  try {
    const res = await fetch(CHAT_PATHS.chatStream, { method: 'POST', headers, body: turn.body, signal: controller.signal, cache: 'no-store' });
    if (!res.ok || !res.body) {
      clearTimeout(wsTimer);
      const err = await apiError(res);
      return err.status === 401 ? turn.unauthorized(err.code) : turn.finish('error', err.message, err.code);
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const parse = sseParser((data, id) => {
      if (id !== null && /^\d+$/.test(id)) {
        const n = Number(id);
        if (turn.lastId !== null && n <= turn.lastId) {
          // The relay no longer had this reply (it expired) and started it again from event 1.
          if (n !== 1) return;
          turn.raw = '';
        }
        turn.lastId = n;
      }
      const event = parseEvent(data);
      if (event) turn.event(event);
    });
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (value) {
        if (!gotBytes) {
          gotBytes = true;
          clearTimeout(wsTimer);
          setStatus('');
          turn.reached();
        }
        turn.lastByteAt = Date.now();
        turn.attempts = 0;
        parse(value);
      }
      if (turn.state !== 'streaming') {
        void reader.cancel().catch(() => {});
        return;
      }
    }
    clearTimeout(wsTimer);
    // The body ended without a terminal event: the connection was cut somewhere on the way.
    turn.interrupted();
  } catch (err) {
    clearTimeout(wsTimer);
    if (turn.state !== 'streaming' || why === 'stop') return;
    if (why === 'ws') return turn.switchToWs();
    // Our own stall abort, or the network (WebKit: "TypeError: Load failed"): resume.
    if (why === 'stall' || isDroppedConnection(err)) return turn.interrupted();
    turn.finish('error', `The reply could not be read: ${err instanceof Error ? err.message : String(err)}`, 'read');
  }
}

function socketUrl(): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${CHAT_PATHS.chatSocket}`;
}

export function runWs(turn: Turn): void {
  turn.attempts += 1;
  turn.raw = '';
  turn.lastId = null;
  let opened = false;
  let ws: WebSocket;
  try {
    ws = new WebSocket(socketUrl(), [SOCKET_PROTOCOL, `${SOCKET_BEARER_PREFIX}${turn.token}`]);
  } catch {
    return turn.finish('error', 'Could not open a WebSocket to the relay.');
  }
  turn.abort = () => ws.close(SOCKET_CLOSE.normal, 'stopped');
  ws.addEventListener('open', () => {
    opened = true;
    setStatus('');
    turn.reached();
    ws.send(turn.body);
  });
  ws.addEventListener('message', (e: MessageEvent) => {
    turn.lastByteAt = Date.now();
    const event = typeof e.data === 'string' ? parseEvent(e.data) : null;
    if (event) turn.event(event);
    if (turn.state !== 'streaming') ws.close(SOCKET_CLOSE.normal);
  });
  ws.addEventListener('close', (e: CloseEvent) => {
    if (turn.state !== 'streaming') return;
    if (!opened) return turn.finish('error', 'The relay refused the WebSocket connection (is the token still valid?). Pair again if this persists.', 'network');
    // The relay refused the request itself (the reason is its error code); it sends an error
    // event first, which has normally ended the turn already.
    if (e.code === SOCKET_CLOSE.policy) {
      if (e.reason.startsWith('auth.')) return turn.unauthorized(e.reason);
      return turn.finish('error', `The relay refused the request (${e.reason || 'policy'}).`, e.reason);
    }
    turn.lost();
  });
}

/**
 * A reply run by the desktop in a conversation it keeps (issue 30): asks for it once
 * (`POST …/reply`, the chat already written there), then follows the conversation's events,
 * resuming after a cut from the last event id; any other client can follow the same reply.
 */
export async function runConversation(turn: Turn): Promise<void> {
  const conv = turn.conversation!;
  const controller = new AbortController();
  turn.abort = () => controller.abort();
  turn.attempts += 1;
  setStatus(turn.lastId !== null ? 'Resuming the reply…' : 'Waiting for the desktop…');
  turn.lastByteAt = Date.now();
  let failure = '';
  try {
    conv.id ??= await conv.prepare();
    const params = { id: conv.id };
    if (turn.lastId === null) {
      const started = await fetch(pathTo(CONVERSATION_PATHS.conversationReply, params), { method: 'POST', headers: bearer(turn.token), signal: controller.signal, cache: 'no-store' });
      if (!started.ok) {
        const err = await apiError(started);
        return err.status === 401 ? turn.unauthorized(err.code) : turn.finish('error', err.message, err.code);
      }
      turn.lastId = ((await started.json()) as ReplyStarted).lastEventId;
    }
    // POST: the same stream; quick tunnels hold back a GET event stream until it closes.
    const res = await fetch(pathTo(CONVERSATION_PATHS.conversationEvents, params), {
      method: 'POST',
      headers: { ...bearer(turn.token), Accept: 'text/event-stream', [HEADERS.lastEventId]: String(turn.lastId) },
      signal: controller.signal,
      cache: 'no-store',
    });
    if (!res.ok || !res.body) {
      const err = await apiError(res);
      return err.status === 401 ? turn.unauthorized(err.code) : turn.finish('error', err.message, err.code);
    }
    setStatus('');
    turn.reached();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const parse = sseParser((data, id) => {
      if (id !== null && /^\d+$/.test(id)) turn.lastId = Number(id);
      const event = JSON.parse(data) as ConversationEvent;
      if (event.type === 'text' && typeof event.delta === 'string') turn.event({ type: 'token', delta: event.delta });
      else if (event.type === 'error') failure = event.message ?? '';
      else if (event.type === 'status' && event.status === 'idle') turn.event({ type: 'done', content: turn.raw });
      else if (event.type === 'status' && event.status === 'failed') turn.event({ type: 'error', message: failure || 'The reply failed.' });
      else if (event.type === 'status' && event.status === 'stopped') turn.finish('stopped');
    });
    while (turn.state === 'streaming') {
      const { value, done } = await reader.read();
      if (done) break;
      turn.lastByteAt = Date.now();
      turn.attempts = 0;
      if (value) parse(value);
    }
    if (turn.state === 'streaming') turn.interrupted();
    else void reader.cancel().catch(() => {});
  } catch (err) {
    if (turn.state !== 'streaming') return;
    if (isDroppedConnection(err) || (err as Error)?.name === 'AbortError') turn.interrupted();
    else turn.finish('error', err instanceof Error ? err.message : String(err));
  } finally {
    controller.abort();
  }
}
