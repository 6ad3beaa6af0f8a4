/**
 * Settings → Devices (issue 36): every device of the desktop with its name and when it was last
 * seen, this phone marked; another can be removed from here (a lost phone cut off from this one).
 * The desk allows that to a device it gave agent access and refuses the others with
 * `403 device.forbidden`, whose words are shown as they are.
 */
import { ApiError } from './api';
import { app } from './app';
import { onUnauthorized } from './connection';
import { listDevices, removeDevice, type ListedDevice } from './devices';
import { el, ui } from './dom';
import { savePairing } from './pairing';

/** "2 minutes ago", "yesterday": when the desk last heard from a device. */
export function lastSeenWords(iso: string, now = Date.now()): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return 'never';
  const s = Math.max(0, Math.round((now - t) / 1000));
  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  if (s < 60) return 'just now';
  if (s < 3600) return rtf.format(-Math.round(s / 60), 'minute');
  if (s < 86_400) return rtf.format(-Math.round(s / 3600), 'hour');
  if (s < 30 * 86_400) return rtf.format(-Math.round(s / 86_400), 'day');
  return new Date(t).toLocaleDateString();
}

function row(d: ListedDevice, token: string): HTMLLIElement {
  const li = el('li', d.current ? 'device-row current' : 'device-row');
  li.dataset.deviceId = d.id;
  const text = el('div', 'device-text');
  const name = el('span', 'device-label', d.name || 'Unnamed device');
  text.append(name);
  if (d.current) text.append(el('span', 'device-mark', 'This phone'));
  text.append(el('span', 'device-seen', d.connected ? 'Connected now' : `Last seen ${lastSeenWords(d.lastSeen)}`));
  li.append(text);
  if (!d.current) {
    const remove = el('button', 'danger-text', 'Remove');
    remove.type = 'button';
    remove.setAttribute('aria-label', `Remove ${d.name || 'this device'}`);
    let asked = false;
    remove.addEventListener('click', () => {
      // The second tap removes: a lost phone is cut off, so the first only asks.
      if (!asked) {
        asked = true;
        remove.textContent = 'Tap again to remove';
        return;
      }
      remove.disabled = true;
      ui.devicesNote.textContent = 'Removing…';
      removeDevice(token, d.id).then(
        () => {
          li.remove();
          ui.devicesNote.textContent = `Removed "${d.name}": its token no longer works.`;
        },
        (err: unknown) => {
          remove.disabled = false;
          asked = false;
          remove.textContent = 'Remove';
          ui.devicesNote.textContent = err instanceof Error ? err.message : 'The device could not be removed.';
          if (err instanceof ApiError && err.status === 401) onUnauthorized(err.message, err.code);
        },
      );
    });
    li.append(remove);
  }
  return li;
}

/** Fills the list (when Settings open); hidden while this phone is not a device. */
export async function showDevices(): Promise<void> {
  const p = app.pairing;
  if (!p?.deviceId) {
    ui.devices.hidden = true;
    return;
  }
  ui.devices.hidden = false;
  ui.devicesNote.textContent = 'Loading…';
  try {
    const list = await listDevices(p.token);
    if (app.pairing !== p) return;
    ui.deviceList.replaceChildren(...list.map((d) => row(d, p.token)));
    ui.devicesNote.textContent = '';
    // The desk keeps a device's name when the phone pairs again: take it from there.
    const mine = list.find((d) => d.current);
    if (mine && mine.name !== p.deviceName) {
      app.pairing = { ...p, deviceName: mine.name };
      if (document.activeElement !== ui.deviceName) ui.deviceName.value = mine.name;
      void savePairing(app.pairing);
    }
  } catch (err) {
    if (app.pairing !== p) return;
    // A relay from before the device list answers 404/405: nothing to show.
    if (err instanceof ApiError && (err.status === 404 || err.status === 405 || err.code === 'wrong_service')) {
      ui.devices.hidden = true;
      return;
    }
    ui.devicesNote.textContent = err instanceof Error ? err.message : 'The devices could not be listed.';
    if (err instanceof ApiError && err.status === 401) onUnauthorized(err.message, err.code);
  }
}
