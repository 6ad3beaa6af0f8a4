// DeskRelay phone web client. Served by the relay itself, so every API call is same-origin.
// The token is a secret: it is kept in memory (and this tab's sessionStorage), sent only in
// the Authorization header or the WebSocket subprotocol, never in a URL query or the console.
// Chat history lives in memory only (SPEC: not persisted).
import { marked } from './vendor/marked.js';
import DOMPurify from './vendor/purify.js';

/**
 * The page's own elements, found once while only index.html is in the document. Model replies are
 * rendered into the same document later, and a lookup by id (or by name, or through window's and
 * document's named properties) at use time could then find an element the model put there.
 */
function pageElement(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  return el;
}
const ui = Object.freeze({
  conn: pageElement('conn'),
  unpair: pageElement('unpair'),
  pair: pageElement('pair'),
  pairForm: /** @type {HTMLFormElement} */ (pageElement('pair-form')),
  pairJson: /** @type {HTMLTextAreaElement} */ (pageElement('pair-json')),
  pairError: pageElement('pair-error'),
  info: pageElement('info'),
  infoHost: pageElement('info-host'),
  infoVersion: pageElement('info-version'),
  infoWarning: pageElement('info-warning'),
  testConn: /** @type {HTMLButtonElement} */ (pageElement('test-conn')),
  chat: pageElement('chat'),
  log: pageElement('log'),
  chatStatus: pageElement('chat-status'),
  compose: /** @type {HTMLFormElement} */ (pageElement('compose')),
  message: /** @type {HTMLTextAreaElement} */ (pageElement('message')),
  newChat: /** @type {HTMLButtonElement} */ (pageElement('new-chat')),
  stop: pageElement('stop'),
  send: /** @type {HTMLButtonElement} */ (pageElement('send')),
});

// ---------------------------------------------------------------------------------------------
// Settings. `#…&wsAfterMs=N` (or window.DESKRELAY_WS_AFTER_MS set before load) changes how long
// an SSE stream may show no bytes before the client switches to the WebSocket; tests shorten it.
const settings = { wsAfterMs: 4000, stallMs: 40000, resumeAttempts: 5 };
if (typeof window.DESKRELAY_WS_AFTER_MS === 'number') settings.wsAfterMs = window.DESKRELAY_WS_AFTER_MS;

const SESSION_KEY = 'deskrelay.pairing';
const TOKEN_RE = /^[A-Za-z0-9._~+/=-]{8,512}$/;

/** @type {{ token: string, url: string } | null} */
let pairing = null;
/** @type {{ role: 'user'|'assistant', content: string }[]} */
const conversation = [];
/** The turn being streamed (at most one). */
let current = null;
/** Once SSE was seen held back on this network, later turns go straight to the WebSocket. */
let preferWs = false;

// ---------------------------------------------------------------------------------------------
// Pairing

function readFragment() {
  const hash = location.hash.replace(/^#/, '');
  if (!hash) return null;
  const params = new URLSearchParams(hash);
  const after = Number(params.get('wsAfterMs'));
  if (params.has('wsAfterMs') && Number.isFinite(after) && after >= 0) settings.wsAfterMs = after;
  const token = params.get('token');
  // Take the secret out of the address bar (and so out of history, bookmarks and shares).
  forgetFragment();
  return token;
}

function forgetFragment() {
  try {
    window.history.replaceState(null, '', location.pathname);
  } catch {
    /* a sandboxed page may refuse; the fragment never reaches a server anyway */
  }
}

/** Parses the pasted pairing JSON: `{"url": "...", "token": "..."}`. Throws a user-facing message. */
function parsePairing(text) {
  const trimmed = text.trim();
  if (!trimmed) throw new Error('Paste the pairing JSON shown on your desktop.');
  let value;
  try {
    value = JSON.parse(trimmed);
  } catch {
    throw new Error('That is not valid JSON. Copy the whole pairing JSON, from { to }.');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('The pairing JSON must be an object with "url" and "token".');
  if (typeof value.url !== 'string' || !value.url) throw new Error('The pairing JSON has no "url".');
  if (typeof value.token !== 'string' || !value.token) throw new Error('The pairing JSON has no "token".');
  let url;
  try {
    url = new URL(value.url);
  } catch {
    throw new Error('The "url" in the pairing JSON is not a URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('The "url" must start with https:// or http://.');
  if (!TOKEN_RE.test(value.token)) throw new Error('The "token" in the pairing JSON does not look like a DeskRelay token.');
  return { url: url.origin, token: value.token };
}

function savePairing(p) {
  pairing = p;
  try {
    if (p) sessionStorage.setItem(SESSION_KEY, JSON.stringify(p));
    else sessionStorage.removeItem(SESSION_KEY);
  } catch {
    /* storage may be disabled: memory is enough */
  }
}

function loadPairing() {
  try {
    const raw = sessionStorage.getItem(SESSION_KEY);
    if (!raw) return null;
    const p = JSON.parse(raw);
    return p && typeof p.token === 'string' && TOKEN_RE.test(p.token) ? { url: String(p.url || location.origin), token: p.token } : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// API

class ApiError extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const AUTH_MESSAGE = 'The token is no longer valid (the desktop relay was restarted or the token rotated). Pair again with the new pairing JSON.';

/** Turns a non-2xx response into a user-facing ApiError (CONTRACT error body when there is one). */
async function apiError(res) {
  let code = '';
  let message = '';
  try {
    const body = await res.json();
    code = body?.error?.code ?? '';
    message = body?.error?.message ?? '';
  } catch {
    /* not the CONTRACT body */
  }
  if (res.status === 401) return new ApiError(AUTH_MESSAGE, 401, code || 'auth.invalid_token');
  if (!code) return new ApiError(`The server at this address answered HTTP ${res.status}; it does not look like a DeskRelay relay.`, res.status, 'wrong_service');
  return new ApiError(message || `The relay refused the request (${code}).`, res.status, code);
}

async function fetchInfo() {
  let res;
  try {
    res = await fetch('/v1/remote/info', { headers: { Authorization: `Bearer ${pairing.token}` }, cache: 'no-store' });
  } catch {
    throw new ApiError('Could not reach the relay. Check that the desktop and its tunnel are running.', 0, 'network');
  }
  if (!res.ok) throw await apiError(res);
  let info;
  try {
    info = await res.json();
  } catch {
    throw new ApiError('This address answers, but not as DeskRelay (the reply is not JSON).', res.status, 'wrong_service');
  }
  if (!info || info.service !== 'deskrelay') throw new ApiError('This address answers, but it is not a DeskRelay relay (wrong service).', res.status, 'wrong_service');
  return info;
}

// ---------------------------------------------------------------------------------------------
// Rendering

marked.setOptions({ gfm: true, breaks: true, async: false });

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
  // The page's own classes would let a reply dress up as a user message, a button or a status
  // line; Markdown only ever needs the highlighter's language-* on code.
  if (node.hasAttribute('class')) {
    const kept = [...node.classList].filter((c) => /^language-[\w+#.-]+$/.test(c));
    if (kept.length) node.setAttribute('class', kept.join(' '));
    else node.removeAttribute('class');
  }
});

/**
 * Model output is untrusted: Markdown → HTML → DOMPurify, with no images, forms or styles.
 * A reply shares the document with the page's controls, so it must not be able to name them or
 * reach them: ids and names are prefixed (`user-content-…`), which keeps them apart from the page's
 * ids and from window's and document's named properties, and the attributes that point at an
 * element by id (a label's `for`, `form`, `list`, popover and command targets, ARIA relations) go,
 * since the only ids they could still hit are the page's.
 */
const SANITIZE = Object.freeze({
  USE_PROFILES: { html: true },
  SANITIZE_NAMED_PROPS: true,
  FORBID_TAGS: [
    'img', 'style', 'iframe', 'video', 'audio', 'source', 'picture', 'svg', 'math',
    'form', 'input', 'button', 'textarea', 'select', 'option', 'optgroup', 'datalist',
    'label', 'fieldset', 'legend', 'output', 'meter', 'progress',
    'dialog', 'map', 'area', 'template', 'slot',
  ],
  FORBID_ATTR: [
    'style', 'srcset', 'action', 'formaction',
    'for', 'form', 'list', 'usemap', 'headers',
    'popover', 'popovertarget', 'popovertargetaction', 'command', 'commandfor',
    'tabindex', 'inert',
  ],
  ALLOW_ARIA_ATTR: false,
  ALLOW_DATA_ATTR: false,
});

function renderMarkdown(text) {
  return DOMPurify.sanitize(marked.parse(text), SANITIZE);
}

/** Splits a reply into its leading `<think>` segment (if any) and the answer. */
function splitThinking(raw) {
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
function withoutThinking(raw) {
  return splitThinking(raw).answer;
}

// Taken at load like the controls: document's named properties outrank its own.
const scroller = document.scrollingElement || document.documentElement;

function scrollToEnd() {
  if (scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 160) scroller.scrollTop = scroller.scrollHeight;
}

/** A chat log entry with its speaker line; the caller appends the body. */
function messageItem(kind, name) {
  const li = document.createElement('li');
  li.className = `msg ${kind}`;
  const who = document.createElement('div');
  who.className = 'who';
  who.textContent = name;
  li.append(who);
  return li;
}

function addUserMessage(text) {
  const li = messageItem('user', 'You');
  const body = document.createElement('div');
  body.textContent = text;
  li.append(body);
  ui.log.append(li);
  scrollToEnd();
}

function addAssistantMessage() {
  const li = messageItem('assistant', 'Desktop');
  const details = document.createElement('details');
  details.className = 'thinking';
  details.hidden = true;
  const summary = document.createElement('summary');
  summary.textContent = 'Thinking';
  const thinkingText = document.createElement('div');
  thinkingText.className = 'thinking-text';
  details.append(summary, thinkingText);
  const reply = document.createElement('div');
  reply.className = 'reply cursor';
  reply.setAttribute('aria-live', 'polite');
  reply.setAttribute('aria-busy', 'true');
  const note = document.createElement('p');
  note.className = 'note';
  note.hidden = true;
  li.append(details, reply, note);
  ui.log.append(li);
  scrollToEnd();
  return { li, details, summary, thinkingText, reply, note };
}

function renderTurn(turn) {
  turn.renderTimer = undefined;
  const { thinking, answer, open, hasThinking } = splitThinking(turn.raw);
  const v = turn.view;
  if (hasThinking) {
    v.details.hidden = false;
    v.summary.textContent = open ? 'Thinking…' : 'Thinking';
    v.thinkingText.textContent = thinking.trim();
  }
  v.reply.innerHTML = renderMarkdown(answer);
  scrollToEnd();
}

function scheduleRender(turn) {
  if (turn.renderTimer === undefined) turn.renderTimer = setTimeout(() => renderTurn(turn), 40);
}

function setNote(turn, text, kind = '', action) {
  const note = turn.view.note;
  note.replaceChildren();
  note.hidden = !text;
  note.className = `note ${kind}`.trim();
  if (!text) return;
  note.append(document.createTextNode(text));
  if (action) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = action.label;
    b.addEventListener('click', action.run);
    note.append(b);
  }
}

function setStatus(text) {
  ui.chatStatus.textContent = text;
}

function setStreaming(on) {
  ui.stop.hidden = !on;
  ui.send.disabled = on;
  ui.newChat.disabled = on;
}

// ---------------------------------------------------------------------------------------------
// Streaming

function newIdempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function startTurn(text) {
  conversation.push({ role: 'user', content: text });
  addUserMessage(text);
  const turn = {
    key: newIdempotencyKey(),
    body: JSON.stringify({ messages: conversation.map((m) => ({ role: m.role, content: m.content })) }),
    raw: '',
    lastId: null,
    state: 'streaming',
    transport: preferWs ? 'ws' : 'sse',
    attempts: 0,
    view: addAssistantMessage(),
    abort: null,
    lastByteAt: Date.now(),
    renderTimer: undefined,
  };
  current = turn;
  setStreaming(true);
  run(turn);
}

function run(turn) {
  setNote(turn, '');
  if (turn.transport === 'ws') runWs(turn);
  else runSse(turn);
}

/** A terminal event (or a pre-stream failure) ends the turn. */
function finish(turn, state, message) {
  if (turn.state !== 'streaming' && turn.state !== 'interrupted') return;
  turn.state = state;
  clearTimeout(turn.renderTimer);
  renderTurn(turn);
  turn.view.reply.classList.remove('cursor');
  turn.view.reply.setAttribute('aria-busy', 'false');
  if (state === 'done') {
    conversation.push({ role: 'assistant', content: withoutThinking(turn.raw) });
    setNote(turn, '');
  } else if (state === 'stopped') {
    const partial = withoutThinking(turn.raw);
    if (partial) conversation.push({ role: 'assistant', content: partial });
    setNote(turn, 'Stopped.');
  } else {
    turn.view.li.classList.add('failed');
    setNote(turn, message || 'The reply failed.', 'error');
  }
  if (current === turn) {
    current = null;
    setStreaming(false);
    setStatus('');
  }
}

function handleEvent(turn, event) {
  if (turn.state !== 'streaming') return;
  if (event.type === 'token' && typeof event.delta === 'string') {
    turn.raw += event.delta;
    scheduleRender(turn);
  } else if (event.type === 'done') {
    if (typeof event.content === 'string') turn.raw = event.content;
    finish(turn, 'done');
  } else if (event.type === 'error') {
    finish(turn, 'error', typeof event.message === 'string' ? event.message : 'The desktop reported an error.');
  }
}

/** Incremental SSE parsing: `id:` and `data:` fields, comments ignored, events end at a blank line. */
function sseParser(onEvent) {
  let buffer = '';
  let data = [];
  let id = null;
  return (chunk) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      let line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length) onEvent(data.join('\n'), id);
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
  };
}

async function runSse(turn) {
  const controller = new AbortController();
  let why = null; // 'stop' | 'ws' | 'stall' when we abort ourselves
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
          if (!gotBytes && turn.state === 'streaming') turn.abort('ws');
        }, settings.wsAfterMs)
      : undefined;
  const headers = {
    Authorization: `Bearer ${pairing.token}`,
    'Content-Type': 'application/json',
    Accept: 'text/event-stream',
    'Idempotency-Key': turn.key,
  };
  if (resuming) headers['Last-Event-ID'] = String(turn.lastId);
  else turn.raw = ''; // a fresh start (or a server that could not resume) replays from the beginning

  setStatus(resuming ? 'Resuming the reply…' : 'Waiting for the desktop…');
  turn.lastByteAt = Date.now();
  try {
    const res = await fetch('/v1/chat/stream', { method: 'POST', headers, body: turn.body, signal: controller.signal, cache: 'no-store' });
    if (!res.ok) {
      clearTimeout(wsTimer);
      const err = await apiError(res);
      if (err.status === 401) onUnauthorized();
      return finish(turn, 'error', err.message);
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
      let event;
      try {
        event = JSON.parse(data);
      } catch {
        return;
      }
      handleEvent(turn, event);
    });
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (value) {
        if (!gotBytes) {
          gotBytes = true;
          clearTimeout(wsTimer);
          setStatus('');
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
    if (turn.state === 'streaming') interrupted(turn);
  } catch (err) {
    clearTimeout(wsTimer);
    if (turn.state !== 'streaming') return;
    if (why === 'stop') return;
    if (why === 'ws') {
      // The held-back SSE generation would otherwise run on beside the WebSocket's.
      cancelKeyed(turn);
      preferWs = true;
      turn.transport = 'ws';
      setStatus('The network holds back streamed replies; switching to a WebSocket…');
      return runWs(turn);
    }
    interrupted(turn, err);
  }
}

function wsUrl() {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/chat/ws`;
}

function runWs(turn) {
  turn.attempts += 1;
  turn.raw = '';
  turn.lastId = null;
  let opened = false;
  let ws;
  try {
    ws = new WebSocket(wsUrl(), ['deskrelay', `deskrelay.bearer.${pairing.token}`]);
  } catch {
    return finish(turn, 'error', 'Could not open a WebSocket to the relay.');
  }
  turn.abort = () => ws.close(1000, 'stopped');
  ws.addEventListener('open', () => {
    opened = true;
    setStatus('');
    ws.send(JSON.stringify({ messages: JSON.parse(turn.body).messages }));
  });
  ws.addEventListener('message', (e) => {
    turn.lastByteAt = Date.now();
    let event;
    try {
      event = JSON.parse(typeof e.data === 'string' ? e.data : '');
    } catch {
      return;
    }
    if (event && event.error && typeof event.error === 'object') {
      if (event.error.code && String(event.error.code).startsWith('auth.')) onUnauthorized();
      return finish(turn, 'error', event.error.code?.startsWith?.('auth.') ? AUTH_MESSAGE : event.error.message || 'The relay refused the request.');
    }
    if (event && typeof event.id === 'number') turn.lastId = event.id;
    handleEvent(turn, event);
    if (turn.state !== 'streaming') ws.close(1000);
  });
  ws.addEventListener('close', (e) => {
    if (turn.state !== 'streaming') return;
    if (!opened) return finish(turn, 'error', 'The relay refused the WebSocket connection (is the token still valid?). Pair again if this persists.');
    // 1008: the relay refused the request itself (the reason is its CONTRACT code); it normally
    // sends an error event first, which has already ended the turn.
    if (e.code === 1008) return finish(turn, 'error', `The relay refused the request (${e.reason || 'policy'}).`);
    finish(turn, 'error');
    setNote(turn, 'The connection to the desktop was lost before the reply finished.', 'error', { label: 'Retry', run: () => retry(turn) });
  });
}

/** Resend the same request as a new turn (after a failure that could not be resumed). */
function retry(turn) {
  if (current) return;
  turn.view.li.remove();
  const last = conversation.at(-1);
  if (!last || last.role !== 'user') return;
  conversation.pop();
  const prev = ui.log.lastElementChild;
  if (prev && prev.classList.contains('user')) prev.remove();
  startTurn(last.content);
}

function interrupted(turn, err) {
  if (turn.state !== 'streaming') return;
  turn.state = 'interrupted';
  turn.abort = null;
  void err;
  setStatus('');
  if (turn.attempts >= settings.resumeAttempts) {
    turn.state = 'streaming';
    finish(turn, 'error', 'The connection to the desktop keeps dropping.');
    setNote(turn, 'The connection to the desktop keeps dropping.', 'error', { label: 'Retry', run: () => retry(turn) });
    return;
  }
  setNote(turn, 'Connection lost; the reply will resume when the page is visible and online.');
  if (document.visibilityState === 'visible' && navigator.onLine !== false) {
    setTimeout(() => maybeResume(), Math.min(250 * 2 ** (turn.attempts - 1), 4000));
  }
}

/** Resume the cut stream: same request, same Idempotency-Key, `Last-Event-ID` of the last event seen. */
function maybeResume() {
  const turn = current;
  if (!turn || document.visibilityState !== 'visible' || navigator.onLine === false) return;
  if (turn.state === 'streaming') {
    // A stream that has been silent for longer than the keep-alive interval is dead (the phone slept).
    if (turn.abort && Date.now() - turn.lastByteAt > settings.stallMs) turn.abort('stall');
    return;
  }
  if (turn.state !== 'interrupted') return;
  turn.state = 'streaming';
  setNote(turn, '');
  if (turn.transport === 'ws') runWs(turn);
  else runSse(turn);
}

function stop() {
  const turn = current;
  if (!turn) return;
  const abort = turn.abort;
  if (turn.state === 'interrupted') turn.state = 'streaming';
  finish(turn, 'stopped');
  if (abort) abort('stop');
  if (turn.transport === 'sse') cancelKeyed(turn);
}

/**
 * A resumable (keyed) generation outlives its connection, so leaving is not enough: ask the relay
 * to cancel it. Best effort: a relay without the cancel answers 404/405 and the generation ends
 * on its own (or after the relay's resume window).
 */
function cancelKeyed(turn) {
  if (!pairing) return;
  fetch('/v1/chat/cancel', {
    method: 'POST',
    headers: { Authorization: `Bearer ${pairing.token}`, 'Idempotency-Key': turn.key },
    keepalive: true,
    cache: 'no-store',
  }).catch(() => {});
}

// ---------------------------------------------------------------------------------------------
// Screens

function onUnauthorized() {
  ui.infoWarning.textContent = AUTH_MESSAGE;
  ui.infoWarning.hidden = false;
  ui.conn.textContent = 'Not connected';
}

function showPairing(message = '') {
  ui.pair.hidden = false;
  ui.info.hidden = true;
  ui.chat.hidden = true;
  ui.unpair.hidden = true;
  ui.conn.textContent = 'Not paired';
  ui.pairError.textContent = message;
}

async function connect() {
  ui.pair.hidden = true;
  ui.info.hidden = false;
  ui.unpair.hidden = false;
  ui.infoWarning.hidden = true;
  ui.conn.textContent = 'Connecting…';
  ui.testConn.disabled = true;
  try {
    const info = await fetchInfo();
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
      savePairing(null);
      showPairing(message);
    } else {
      ui.infoWarning.textContent = message;
      ui.infoWarning.hidden = false;
      ui.conn.textContent = 'Not connected';
      ui.chat.hidden = false;
    }
    return false;
  } finally {
    ui.testConn.disabled = false;
  }
}

function init() {
  const fragmentToken = readFragment();
  if (fragmentToken) {
    if (TOKEN_RE.test(fragmentToken)) savePairing({ url: location.origin, token: fragmentToken });
    else return showPairing('The link did not carry a valid token. Paste the pairing JSON instead.');
  } else {
    pairing = loadPairing();
  }

  ui.pairForm.addEventListener('submit', (e) => {
    e.preventDefault();
    try {
      const p = parsePairing(ui.pairJson.value);
      ui.pairJson.value = '';
      savePairing({ url: location.origin, token: p.token });
      ui.pairError.textContent = '';
      void connect().then((ok) => {
        // The page always talks to the relay that served it (CSP: connect-src 'self').
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

  if (pairing) void connect();
  else showPairing();
}

init();
