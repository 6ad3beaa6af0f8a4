/**
 * The connection to the desktop: pairing, connecting (`GET /v1/remote/info`), the header's status
 * dot and the banner that says why it is not green, the settings sheet's desktop details, and
 * forgetting the desktop ("Forget this desktop", "Pair again" after a confirmation).
 */
import { ApiError, AUTH_MESSAGE, fetchInfo } from './api';
import { app } from './app';
import { renewPushAfterConnect, hideBell } from './bell';
import { newChat } from './chats';
import { showChat, stop, updateEmpty } from './conversation';
import { ui } from './dom';
import { clearPending } from './pending';
import { remembered, savePairing, type Pairing } from './pairing';
import { hideProviders, loadProviders } from './providers';
import { fitComposer } from './ui/composer';
import { closeLayer } from './ui/layer';
import { showHistory } from './library';

export type Health = 'ok' | 'connecting' | 'down';

/** The header's dot (green, amber, red) and its words; red comes with the banner saying why. */
export function setHealth(health: Health, text: string, why = ''): void {
  ui.statusDot.className = `dot ${health}`;
  ui.statusDot.setAttribute('aria-label', health === 'ok' ? 'Connected' : health === 'connecting' ? 'Connecting' : 'Not connected');
  ui.conn.textContent = text;
  ui.infoWarning.textContent = why;
  ui.infoWarning.hidden = !why;
}

/** A reply's view of the way to the desktop: amber while it reconnects, red when it gave up. */
export function replyReach(state: 'ok' | 'reconnecting' | 'unreachable', why: string): void {
  if (state === 'ok') {
    if (ui.statusDot.classList.contains('ok')) return;
    if (app.info) setHealth('ok', `${app.info.hostname} · v${app.info.version}`);
    else void connect();
  } else if (state === 'reconnecting') setHealth('connecting', 'Reconnecting…');
  else setHealth('down', 'Desktop unreachable', why);
}

export function onUnauthorized(): void {
  setHealth('down', 'Not connected', AUTH_MESSAGE);
}

export function showPairing(message = ''): void {
  closeLayer();
  ui.pair.hidden = false;
  ui.chat.hidden = true;
  ui.chatsOpen.hidden = true;
  ui.newChat.hidden = true;
  ui.menuOpen.hidden = true;
  ui.chatHeading.textContent = 'DeskRelay';
  hideBell();
  hideProviders();
  showHistory(false);
  setHealth('down', 'Not paired');
  ui.pairError.textContent = message;
  for (const f of app.onConnection) f();
}

function showChatScreen(): void {
  ui.pair.hidden = true;
  ui.chat.hidden = false;
  ui.chatsOpen.hidden = false;
  ui.newChat.hidden = false;
  ui.menuOpen.hidden = false;
  updateEmpty();
  fitComposer();
}

export async function connect(): Promise<boolean> {
  if (!app.pairing) return false;
  ui.pair.hidden = true;
  ui.remember.checked = remembered();
  setHealth('connecting', 'Connecting…');
  ui.testConn.disabled = true;
  try {
    const info = await fetchInfo(app.pairing.token);
    app.info = info;
    ui.infoHost.textContent = String(info.hostname ?? '');
    ui.infoVersion.textContent = String(info.version ?? '');
    setHealth(
      'ok',
      `${info.hostname} · v${info.version}`,
      info.providerConfigured === false ? 'The desktop has no usable provider selected: switch to a local provider on the desktop before chatting.' : '',
    );
    showChatScreen();
    void loadProviders(app.pairing.token);
    renewPushAfterConnect(app.pairing.token);
    for (const f of app.onConnection) f();
    return true;
  } catch (err) {
    const message = err instanceof Error ? err.message : 'Could not connect.';
    if (err instanceof ApiError && (err.status === 401 || err.code === 'wrong_service')) {
      app.pairing = null;
      savePairing(null);
      showPairing(message);
    } else {
      setHealth('down', err instanceof ApiError && err.code === 'network' ? 'Desktop unreachable' : 'Not connected', message);
      showChatScreen();
    }
    return false;
  } finally {
    ui.testConn.disabled = false;
  }
}

export function pairWith(p: Pairing, remember = false): void {
  app.pairing = p;
  savePairing(p, remember);
}

/** "Forget this desktop" (and "Pair again"): the pairing goes from this tab and this phone; chats stay. */
export function forgetDesktop(): void {
  stop();
  clearPending();
  app.pairing = null;
  savePairing(null);
  showChat(newChat());
  showPairing();
}

function confirmUnpair(on: boolean): void {
  ui.unpairConfirm.hidden = !on;
  ui.unpair.hidden = on;
  if (on) ui.unpairCancel.focus();
}

export function initConnection(): void {
  ui.testConn.addEventListener('click', () => void connect());
  // "Pair again" is not one tap away from losing the pairing: it asks first.
  ui.unpair.addEventListener('click', () => confirmUnpair(true));
  ui.unpairCancel.addEventListener('click', () => {
    confirmUnpair(false);
    ui.unpair.focus();
  });
  ui.unpairYes.addEventListener('click', () => {
    confirmUnpair(false);
    forgetDesktop();
  });
  ui.forget.addEventListener('click', forgetDesktop);
  ui.remember.addEventListener('change', () => {
    if (app.pairing) savePairing(app.pairing, ui.remember.checked);
  });
}
