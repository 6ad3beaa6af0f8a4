/**
 * DeskRelay phone web client: served by the relay itself, so every API call is same-origin.
 * This module only starts the page: it wires the screens' modules (connection, conversation,
 * library, settings) to the page's controls and events.
 */
import { app } from './app';
import { initBell } from './bell';
import { connect, initConnection, pairWith, replyReach, showPairing } from './connection';
import { endEdit, keepReplyNow, maybeResume, resumePending, sendComposed, showChat, stop, updateEmpty } from './conversation';
import { ui } from './dom';
import { registerServiceWorker } from './install';
import { initLibrary, refreshList, save, startNewChat } from './library';
import { loadPairing, readFragment, TOKEN_RE } from './pairing';
import { initPhotos, pending, setPending } from './photos';
import { initProviders, onProvidersChanged } from './providers';
import { fitComposer, initComposer } from './ui/composer';
import { closeLayer, initLayers, openLayer } from './ui/layer';
import { initToast } from './ui/toast';
import { initViewport } from './ui/viewport';

// The agent's screens and voice are chunks of their own (scripts/build-web.mjs), fetched after the
// page is up rather than with it: most people use neither at first paint. The service worker keeps
// them with the shell, so both still work offline. A failed fetch is tried again at the next need.
type AgentModule = typeof import('./agent/screen');
type VoiceModule = typeof import('./voiceChat');
let agentModule: Promise<AgentModule> | undefined;
let voiceModule: VoiceModule | undefined;
/** Read as the page loads: taking the pairing token out of the address bar also drops the query. */
const launchSearch = location.search;

/** A stylesheet beside the page, added once; settled either way (unstyled beats absent). */
function stylesheet(href: string): Promise<void> {
  return new Promise((resolve) => {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = href;
    link.onload = link.onerror = () => resolve();
    document.head.append(link);
  });
}

function loadAgent(): Promise<AgentModule> {
  // The agent's styles come with its code (agent.css), not with the page's first paint.
  agentModule ??= Promise.all([import('./agent/screen'), stylesheet('agent.css')]).then(
    ([m]) => {
      m.initAgent(launchSearch);
      return m;
    },
    (err: unknown) => {
      agentModule = undefined;
      throw err;
    },
  );
  return agentModule;
}

/** After each connection: the agent's switch (or its "turn it on" hint) once paired. */
function refreshAgent(): void {
  if (!agentModule && !app.pairing) return; // nothing of the agent to show or hide yet
  loadAgent().then((m) => m.refreshAgent(), () => undefined);
}

let pairScreenLoading: Promise<unknown> | undefined;
function loadPairScreen(): void {
  pairScreenLoading ??= import('./pairScreen').then(
    (m) => m.initPairScreen(),
    () => (pairScreenLoading = undefined),
  );
}

let voiceLoading = false;
function loadVoice(): void {
  if (voiceModule || voiceLoading) return;
  voiceLoading = true;
  // Its styles come with it (voice.css), like the agent's.
  Promise.all([import('./voiceChat'), stylesheet('voice.css')]).then(
    ([m]) => {
      voiceModule = m;
      m.initVoice();
    },
    () => undefined,
  ).finally(() => (voiceLoading = false));
}

function initCompose(): void {
  ui.compose.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = ui.message.value.trim();
    const images = [...pending];
    if (!sendComposed(text, images)) return;
    ui.message.value = '';
    setPending([]);
    fitComposer();
  });
  ui.editCancel.addEventListener('click', () => {
    endEdit();
    ui.message.value = '';
    setPending([]);
    fitComposer();
  });
  // Enter sends on a desktop browser (Shift+Enter: a new line); on a phone it is a new line and
  // the Send button sends. Ctrl/Cmd+Enter sends everywhere.
  const phoneKeyboard = () => matchMedia('(pointer: coarse)').matches;
  ui.message.enterKeyHint = phoneKeyboard() ? 'enter' : 'send';
  ui.message.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.isComposing) return;
    if (e.ctrlKey || e.metaKey || (!phoneKeyboard() && !e.shiftKey && !e.altKey)) {
      e.preventDefault();
      ui.compose.requestSubmit();
    }
  });
  ui.stop.addEventListener('click', stop);
  ui.newChat.addEventListener('click', startNewChat);
}

/** The settings sheet: the desktop, this chat's system prompt, this phone's choices, pairing. */
function initSettings(): void {
  ui.menuOpen.addEventListener('click', () => {
    openLayer(ui.settingsSheet, ui.menuOpen);
    import('./deviceList').then((m) => m.showDevices(), () => undefined);
  });
  ui.settingsClose.addEventListener('click', closeLayer);
  let systemTimer: ReturnType<typeof setTimeout> | undefined;
  const saveSystem = () => {
    clearTimeout(systemTimer);
    const { chat } = app;
    if (chat.systemPrompt === ui.systemPrompt.value) return;
    chat.systemPrompt = ui.systemPrompt.value;
    ui.system.classList.toggle('set', !!chat.systemPrompt.trim());
    void save(chat);
  };
  ui.systemPrompt.addEventListener('input', () => {
    clearTimeout(systemTimer);
    systemTimer = setTimeout(saveSystem, 400);
  });
  ui.systemPrompt.addEventListener('change', saveSystem);
}

async function init(): Promise<void> {
  const fragmentToken = readFragment();
  // The device this phone keeps (IndexedDB): the installed app, opened at `/`, is paired at once.
  app.pairing = await loadPairing();
  if (fragmentToken) {
    // A pairing link (scanned again): registering with it keeps this phone the same device (same key).
    if (TOKEN_RE.test(fragmentToken)) await pairWith({ url: location.origin, token: fragmentToken });
    else showPairing('The link did not carry a valid token. Scan the QR code again or enter a pairing code.');
  }
  ui.keepChats.checked = app.store.persistent;
  initViewport();
  initLayers();
  initToast();
  initComposer();
  initProviders();
  onProvidersChanged(() => {
    updateEmpty();
    if (voiceModule) voiceModule.refreshVoice();
    else loadVoice();
  });
  initPhotos();
  initLibrary();
  initConnection();
  initBell();
  initSettings();
  // Never a native submit: it would put the pasted token in the address. The pairing screen's own
  // handlers (a chunk, loaded when the screen shows) do the rest.
  for (const form of [ui.pairForm, ui.codeForm]) form.addEventListener('submit', (e) => e.preventDefault());
  app.onConnection.push(() => {
    if (!ui.pair.hidden) loadPairScreen();
  });
  initCompose();
  loadVoice();
  app.onConnection.push(refreshAgent);
  // A notification opened while this page was there (web/sw: agent_needs_you, agent_idle).
  navigator.serviceWorker?.addEventListener('message', (e: MessageEvent) => {
    const data = e.data as { type?: unknown; session?: unknown; callId?: unknown } | null;
    if ((data?.type === 'agent_needs_you' || data?.type === 'agent_idle') && typeof data.session === 'string') {
      const { session } = data;
      const callId = typeof data.callId === 'string' ? data.callId : undefined;
      loadAgent().then((m) => m.openNotified(session, callId), () => undefined);
    }
  });

  // The notification was opened while this page was still there: back to the reply, resumed.
  navigator.serviceWorker?.addEventListener('message', (e: MessageEvent) => {
    const data = e.data as { type?: unknown } | null;
    if (data?.type === 'reply_ready') maybeResume();
  });
  document.addEventListener('visibilitychange', maybeResume);
  // Leaving (reload, app switcher, the phone discarding the tab next): the reply as it stands.
  window.addEventListener('pagehide', keepReplyNow);
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden') keepReplyNow();
  });
  window.addEventListener('online', maybeResume);
  window.addEventListener('pageshow', maybeResume);
  window.addEventListener('focus', maybeResume);
  // Offline: no stream can be alive, whatever the socket says; the header says so at once.
  window.addEventListener('offline', () => {
    if (!app.pairing) return;
    replyReach('reconnecting', '');
    app.current?.offline();
  });
  // Back online: say so at once rather than at the next message.
  window.addEventListener('online', () => {
    if (app.pairing && !app.current && /^(Desktop unreachable|Reconnecting…)$/.test(ui.conn.textContent ?? '')) void connect();
  });

  // The pairing link opened again while the page is open (a rotated token): only the fragment
  // changes, so the page is not reloaded; take the token (and take it out of the address bar).
  window.addEventListener('hashchange', () => {
    const token = readFragment();
    if (!token) return;
    if (!TOKEN_RE.test(token)) return showPairing('The link did not carry a valid token. Scan the QR code again or enter a pairing code.');
    stop();
    void pairWith({ url: location.origin, token }).then(() => connect());
  });

  if (app.pairing) void connect();
  else if (!fragmentToken || !TOKEN_RE.test(fragmentToken)) showPairing(ui.pairError.textContent ?? '');
  if (!app.pairing) loadPairScreen();
  // The most recent chat comes back on screen (unless a message was sent meanwhile).
  void refreshList().then(() => {
    resumePending();
    const latest = app.chats[0];
    if (latest && !app.chat.messages.length && !app.current) showChat(structuredClone(latest));
    else updateEmpty();
  });
  registerServiceWorker();
}

void init();
