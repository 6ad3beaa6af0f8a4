/**
 * DeskRelay phone web client: served by the relay itself, so every API call is same-origin.
 * This module wires the screens (pairing, connection, chat) to the other modules.
 */
import type { ChatRequestBody } from '../../server/src/protocol';
import { ApiError, AUTH_MESSAGE, fetchInfo } from './api';
import { registerServiceWorker } from './install';
import { ui } from './dom';
import { loadPairing, parsePairing, readFragment, savePairing, TOKEN_RE, type Pairing } from './pairing';
import { followScroll, setStatus, userMessage, withoutThinking } from './render';
import { Turn } from './turn';

interface Message {
  role: 'user' | 'assistant';
  /** As received: an assistant's reply keeps its thinking (shown folded, never sent back). */
  content: string;
}

let pairing: Pairing | null = null;
const conversation: Message[] = [];
/** The turn being streamed (at most one). */
let current: Turn | null = null;

function history(): ChatRequestBody['messages'] {
  return conversation.map((m) => ({ role: m.role, content: m.role === 'assistant' ? withoutThinking(m.content) : m.content }));
}

function startTurn(text: string): void {
  if (!pairing) return;
  conversation.push({ role: 'user', content: text });
  userMessage(text);
  followScroll(true);
  current = new Turn(pairing.token, history(), {
    finished(turn) {
      if (turn.state === 'done' || (turn.state === 'stopped' && withoutThinking(turn.raw))) conversation.push({ role: 'assistant', content: turn.raw });
      if (current === turn) current = null;
    },
    unauthorized: onUnauthorized,
    retry,
  });
  current.start();
}

/** Resend the same request as a new turn (after a failure that could not be resumed). */
function retry(turn: Turn): void {
  if (current) return;
  turn.view.li.remove();
  const last = conversation.at(-1);
  if (!last || last.role !== 'user') return;
  conversation.pop();
  const prev = ui.log.lastElementChild;
  if (prev && prev.classList.contains('user')) prev.remove();
  startTurn(last.content);
}

function stop(): void {
  current?.stop();
}

function maybeResume(): void {
  current?.maybeResume();
}

// ---------------------------------------------------------------------------------------------
// Screens

function onUnauthorized(): void {
  ui.infoWarning.textContent = AUTH_MESSAGE;
  ui.infoWarning.hidden = false;
  ui.conn.textContent = 'Not connected';
}

function showPairing(message = ''): void {
  ui.pair.hidden = false;
  ui.info.hidden = true;
  ui.chat.hidden = true;
  ui.unpair.hidden = true;
  ui.conn.textContent = 'Not paired';
  ui.pairError.textContent = message;
}

async function connect(): Promise<boolean> {
  if (!pairing) return false;
  ui.pair.hidden = true;
  ui.info.hidden = false;
  ui.unpair.hidden = false;
  ui.infoWarning.hidden = true;
  ui.conn.textContent = 'Connecting…';
  ui.testConn.disabled = true;
  try {
    const info = await fetchInfo(pairing.token);
    ui.infoHost.textContent = String(info.hostname ?? '');
    ui.infoVersion.textContent = String(info.version ?? '');
    ui.conn.textContent = `${info.hostname} · v${info.version}`;
    if (info.providerConfigured === false) {
      ui.infoWarning.textContent = 'The desktop has no usable provider selected: switch to a local provider on the desktop before chatting.';
      ui.infoWarning.hidden = false;
    }
    ui.chat.hidden = false;
    return true;
  } catch (err) {
    const message = err instanceof Error ? err.message : 'Could not connect.';
    if (err instanceof ApiError && (err.status === 401 || err.code === 'wrong_service')) {
      pairing = null;
      savePairing(null);
      showPairing(message);
    } else {
      ui.infoWarning.textContent = message;
      ui.infoWarning.hidden = false;
      ui.conn.textContent = err instanceof ApiError && err.code === 'network' ? 'Desktop unreachable' : 'Not connected';
      ui.chat.hidden = false;
    }
    return false;
  } finally {
    ui.testConn.disabled = false;
  }
}

function pairWith(p: Pairing): void {
  pairing = p;
  savePairing(p);
}

function init(): void {
  const fragmentToken = readFragment();
  if (fragmentToken) {
    if (TOKEN_RE.test(fragmentToken)) pairWith({ url: location.origin, token: fragmentToken });
    else return showPairing('The link did not carry a valid token. Paste the pairing JSON instead.');
  } else {
    pairing = loadPairing();
  }

  ui.pairForm.addEventListener('submit', (e) => {
    e.preventDefault();
    try {
      const p = parsePairing(ui.pairJson.value);
      ui.pairJson.value = '';
      // The page always talks to the relay that served it (CSP: connect-src 'self').
      pairWith({ url: location.origin, token: p.token });
      ui.pairError.textContent = '';
      void connect().then((ok) => {
        if (ok && p.url !== location.origin && ui.infoWarning.hidden) {
          ui.infoWarning.textContent = `The pairing URL (${p.url}) is not this page's address; this page talks to ${location.origin}.`;
          ui.infoWarning.hidden = false;
        }
      });
    } catch (err) {
      ui.pairError.textContent = err instanceof Error ? err.message : String(err);
      ui.pairJson.focus();
    }
  });
  ui.testConn.addEventListener('click', () => void connect());
  ui.unpair.addEventListener('click', () => {
    stop();
    pairing = null;
    savePairing(null);
    conversation.length = 0;
    ui.log.replaceChildren();
    showPairing();
  });
  ui.compose.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = ui.message.value.trim();
    if (!text || current || !pairing) return;
    ui.message.value = '';
    startTurn(text);
  });
  ui.message.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      ui.compose.requestSubmit();
    }
  });
  ui.stop.addEventListener('click', stop);
  ui.newChat.addEventListener('click', () => {
    if (current) return;
    conversation.length = 0;
    ui.log.replaceChildren();
    setStatus('');
  });
  document.addEventListener('visibilitychange', maybeResume);
  window.addEventListener('online', maybeResume);
  window.addEventListener('pageshow', maybeResume);
  window.addEventListener('focus', maybeResume);

  // Back online: say so at once rather than at the next message.
  window.addEventListener('online', () => {
    if (pairing && !current && ui.conn.textContent === 'Desktop unreachable') void connect();
  });

  if (pairing) void connect();
  else showPairing();
  registerServiceWorker();
}

init();
