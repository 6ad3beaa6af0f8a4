/**
 * The connection to the desktop: pairing (and registering this phone as a device of the desktop,
 * issue 26), connecting (`GET /v1/remote/info`), the header's status dot and the banner that says
 * why it is not green, the settings sheet's desktop details and this phone's name there, and
 * forgetting the desktop ("Forget this desktop", "Unpair" after a confirmation).
 */
import { ApiError, bearer, fetchInfo } from './api';
import { CHAT_PATHS } from '../../server/src/protocol/paths';
import { desktopKeeps, useDesktopChats } from './library';
import { app } from './app';
import { renewPushAfterConnect, hideBell } from './bell';
import { newChat } from './chats';
import { showChat, stop, updateEmpty } from './conversation';
import { ui } from './dom';
import { authMessage, DEVICE_REMOVED_CODE, isDeviceToken, PHONE_REMOVED_CODE, registerDevice, renameDevice, unpairDevice } from './devices';
import { forgetAll, readKeys } from './keep';
import { clearPending } from './pending';
import { savePairing, type Pairing } from './pairing';
import type { FailureCode } from './failure';
import { hideProviders, loadProviders } from './providers';
import { fitComposer } from './ui/composer';
import { closeLayer } from './ui/layer';
import { showHistory } from './library';

export type Health = 'ok' | 'connecting' | 'down';

/** The header's second line when all is well: the state and the computer, in a person's words (the version is in Settings). */
const connectedTo = (info: { hostname?: string }) => (info.hostname ? `Connected · ${info.hostname}` : 'Connected');

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
    if (app.info) setHealth('ok', connectedTo(app.info));
    else void connect();
  } else if (state === 'reconnecting') setHealth('connecting', 'Reconnecting…');
  else setHealth('down', 'Desktop unreachable', why);
}

/**
 * A request was refused (401): say why. A phone the desk removed forgets its device and key at
 * once (its "Pair again" starts afresh); one the desk forgot (rotation) forgets its device token.
 */
export function onUnauthorized(message = authMessage(app.pairing?.token ?? ''), code: FailureCode = ''): void {
  setHealth('down', 'Not connected', message);
  if (code === PHONE_REMOVED_CODE || code === DEVICE_REMOVED_CODE) void forgetAll();
  else if (app.pairing && isDeviceToken(app.pairing.token)) void savePairing(null);
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

/** Settings' "This phone" part: shown once the phone is a device of the desktop. */
function showDevice(): void {
  const p = app.pairing;
  ui.device.hidden = !p?.deviceId;
  if (document.activeElement !== ui.deviceName) ui.deviceName.value = p?.deviceName ?? '';
  ui.deviceNote.textContent = '';
}

let registering: Promise<void> | null = null;
/** The device this phone kept when a new pairing came (the link scanned again): still used if the desk takes it. */
let keptBefore: Pairing | null = null;

/**
 * Whether the desk still takes a device token: only its 401 says no. A failed or busy request is
 * no answer, and registering again on it would end the token the phone keeps.
 */
const stillTaken = (token: string) =>
  fetch(CHAT_PATHS.info, { headers: bearer(token), cache: 'no-store' }).then(
    (res) => res.status !== 401,
    () => true,
  );

/**
 * Trades the pairing token for a device token of this phone's own (once: connect() runs it while
 * the phone holds a pairing token). A relay without devices leaves the pairing token in use; any
 * other refusal but a 401 (a full desk, a failed save) does too, and the next connection tries
 * again. A 401 is thrown: the pairing token itself is stale.
 */
function register(): Promise<void> {
  registering ??= (async () => {
    const p = app.pairing;
    if (!p || isDeviceToken(p.token)) return;
    // Paired already and the desk still takes it: nothing to register (no new token, so no
    // reply of this phone's is cut by its old token stopping). The pairing token is dropped.
    const kept = keptBefore;
    keptBefore = null;
    if (kept && (await stillTaken(kept.token))) {
      if (app.pairing === p) app.pairing = kept;
      return;
    }
    const { defaultDeviceName, mySignedKey } = await import('./registration');
    const name = defaultDeviceName(navigator.userAgent);
    let device;
    try {
      device = await registerDevice(p.token, name, await mySignedKey(name));
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) throw err;
      return;
    }
    // Forgotten or re-paired meanwhile: this registration is not the phone's any more.
    if (!device || app.pairing !== p) {
      if (device) void unpairDevice(device.token, device.id).catch(() => {});
      return;
    }
    // The pairing token is done with: from here on only the device's own token is used (and kept).
    app.pairing = { url: p.url, token: device.token, deviceId: device.id, deviceName: name };
    await savePairing(app.pairing);
  })().finally(() => (registering = null));
  return registering;
}

export async function connect(): Promise<boolean> {
  if (!app.pairing) return false;
  ui.pair.hidden = true;
  setHealth('connecting', 'Connecting…');
  ui.testConn.disabled = true;
  try {
    await register();
    if (!app.pairing) return false;
    showDevice();
    const token = app.pairing.token;
    // Asked with the desktop's details, before the chat shows: a message sent at once must go
    // where the chats are kept, not be run by this phone because the answer came a moment later.
    const [info, keeps] = await Promise.all([fetchInfo(token), desktopKeeps(token)]);
    app.info = info;
    ui.infoHost.textContent = String(info.hostname ?? '');
    ui.infoVersion.textContent = String(info.version ?? '');
    setHealth(
      'ok',
      connectedTo(info),
      info.providerConfigured === false ? 'The desktop has no usable provider selected: switch to a local provider on the desktop before chatting.' : '',
    );
    showChatScreen();
    void loadProviders(app.pairing.token);
    renewPushAfterConnect(app.pairing.token);
    useDesktopChats(token, keeps);
    for (const f of app.onConnection) f();
    return true;
  } catch (err) {
    let message = err instanceof Error ? err.message : 'Could not connect.';
    if (err instanceof ApiError && err.status === 401 && app.pairing) message = authMessage(app.pairing.token, err.code);
    if (err instanceof ApiError && (err.status === 401 || err.code === 'wrong_service')) {
      app.pairing = null;
      if (err.code === DEVICE_REMOVED_CODE) await forgetAll();
      else await savePairing(null);
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

/**
 * A new pairing (a link, the pasted JSON, a scanned QR code), held in memory only; connect() then
 * registers this phone with it, unless the device it keeps is still taken by the desk. A phone
 * with a key registering again stays the same device (the key is sent again and the desk
 * replaces its token); a device kept from before keys is removed, as a new one comes.
 */
export async function pairWith(p: Pairing): Promise<void> {
  const before = app.pairing;
  keptBefore = null;
  // The new pairing is in use only once the kept device is known: a connection started while
  // the keys are read would register this phone again, and its new token would end its old one.
  if (before?.deviceId && isDeviceToken(before.token)) {
    if (await readKeys()) keptBefore = before;
    else void leaveDevice(before);
  }
  app.pairing = p;
}



/**
 * This phone stops being a device of the desktop: removed there, best effort. Once the phone
 * forgets its device token nobody holds it, so a failure here (the desktop unreachable, already
 * removed) leaves nothing usable behind; the desk's device list shows it until revoked there.
 */
function leaveDevice(p = app.pairing): Promise<boolean> {
  if (!p?.deviceId || !isDeviceToken(p.token)) return Promise.resolve(true);
  return unpairDevice(p.token, p.deviceId).then(
    () => true,
    () => false,
  );
}

/** Forgets the device and its key on this phone and shows the pairing screen; chats stay. */
function forgetPairing(message = ''): void {
  stop();
  clearPending();
  app.pairing = null;
  void forgetAll();
  showDevice();
  showChat(newChat());
  showPairing(message);
}

/** "Forget this desktop" (and a removed phone's "Pair again"): the pairing goes, and the device with it. */
export function forgetDesktop(): void {
  void leaveDevice();
  forgetPairing();
}

/** "Unpair": this phone removes itself from the desktop, then forgets it. */
async function unpair(): Promise<void> {
  const name = app.pairing?.deviceName;
  ui.unpairYes.disabled = true;
  try {
    const removed = await leaveDevice();
    forgetPairing(
      removed ? '' : `This phone forgot the desktop, but could not reach it to remove itself: remove "${name ?? 'this phone'}" there (DeskRelay: Manage Devices).`,
    );
  } finally {
    ui.unpairYes.disabled = false;
  }
}

/** Settings' name field: the desktop lists this phone under it (PATCH /v1/devices/<id>). */
async function saveDeviceName(): Promise<void> {
  const p = app.pairing;
  if (!p?.deviceId) return;
  const name = ui.deviceName.value.trim();
  if (name === p.deviceName) return;
  if (!name) {
    ui.deviceName.value = p.deviceName ?? '';
    ui.deviceNote.textContent = 'A name cannot be empty; the desktop keeps the old one.';
    return;
  }
  ui.deviceNote.textContent = 'Saving…';
  try {
    const renamed = await renameDevice(p.token, p.deviceId, name);
    if (app.pairing !== p) return;
    if (!renamed) {
      ui.deviceName.value = p.deviceName ?? '';
      ui.deviceNote.textContent = 'This desktop cannot rename devices; rename it there.';
      return;
    }
    app.pairing = { ...p, deviceName: renamed.name };
    await savePairing(app.pairing);
    ui.deviceName.value = renamed.name;
    ui.deviceNote.textContent = 'Saved: the desktop lists this phone under this name.';
  } catch (err) {
    if (app.pairing !== p) return;
    ui.deviceName.value = p.deviceName ?? '';
    ui.deviceNote.textContent = err instanceof Error ? err.message : 'The name could not be saved.';
    if (err instanceof ApiError && err.status === 401) onUnauthorized(err.message, err.code);
  }
}

function confirmUnpair(on: boolean): void {
  ui.unpairConfirm.hidden = !on;
  ui.unpair.hidden = on;
  if (on) ui.unpairCancel.focus();
}

export function initConnection(): void {
  ui.testConn.addEventListener('click', () => void connect());
  // "Unpair" is not one tap away from losing the pairing: it asks first.
  ui.unpair.addEventListener('click', () => confirmUnpair(true));
  ui.unpairCancel.addEventListener('click', () => {
    confirmUnpair(false);
    ui.unpair.focus();
  });
  ui.unpairYes.addEventListener('click', () => {
    confirmUnpair(false);
    void unpair();
  });
  ui.deviceName.addEventListener('change', () => void saveDeviceName());
  ui.deviceName.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.isComposing) {
      e.preventDefault();
      ui.deviceName.blur();
    }
  });
  ui.forget.addEventListener('click', forgetDesktop);
}
