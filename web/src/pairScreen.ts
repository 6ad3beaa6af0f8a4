/**
 * The pairing screen's three ways in (issue 36): scan the desk's QR code with the camera in the
 * page, enter the one-time pairing code the desk shows, or paste the pairing JSON. The installed
 * app (opened at `/`, no token in its address) pairs through these. A chunk of its own: a phone
 * that is paired (most loads) never fetches it; main.ts loads it when the screen shows.
 */
import { ApiError } from './api';
import { app } from './app';
import { claimDevice, CODE_MESSAGES, normalizeCode } from './claim';
import { connect, pairWith } from './connection';
import { ui } from './dom';
import { savePairing, type Pairing } from './pairing';
import { pairingFromScan, parsePairing } from './pairingText';
import type { Scanner } from './qrScan';

let scanner: Scanner | null = null;

function stopScan(): void {
  scanner?.stop();
  scanner = null;
  ui.scan.hidden = true;
  ui.scanOpen.hidden = false;
}

/** A pairing from the QR code or the pasted JSON: the page talks to the relay that served it (CSP: connect-src 'self'). */
async function pairWithToken(p: Pairing): Promise<void> {
  await pairWith({ url: location.origin, token: p.token });
  const ok = await connect();
  if (ok && p.url !== location.origin && ui.infoWarning.hidden) {
    ui.infoWarning.textContent = `The pairing URL (${p.url}) is not this page's address; this page talks to ${location.origin}.`;
    ui.infoWarning.hidden = false;
  }
}

async function scan(): Promise<void> {
  ui.scanNote.textContent = '';
  ui.scanOpen.hidden = true;
  ui.scan.hidden = false;
  try {
    const { startScan } = await import('./qrScan');
    scanner = await startScan(ui.scanVideo, (text) => {
      stopScan();
      try {
        void pairWithToken(pairingFromScan(text));
      } catch (err) {
        ui.scanNote.textContent = err instanceof Error ? err.message : String(err);
      }
    });
  } catch (err) {
    stopScan();
    ui.scanNote.textContent = err instanceof Error ? err.message : 'The camera could not be started.';
  }
}

/**
 * A pairing code typed in the installed app (no token): this phone becomes a device at once and
 * connects. Throws ApiError worded for the user (wrong code, too many tries).
 */
async function pairWithCode(code: string): Promise<boolean> {
  const { defaultDeviceName, mySignedKey } = await import('./registration');
  const name = defaultDeviceName(navigator.userAgent);
  const device = await claimDevice(code, name, await mySignedKey(name));
  app.pairing = { url: location.origin, token: device.token, deviceId: device.id, deviceName: name };
  await savePairing(app.pairing);
  return connect();
}

async function submitCode(): Promise<void> {
  const code = normalizeCode(ui.pairCode.value);
  if (!code) {
    ui.codeError.textContent = CODE_MESSAGES.format;
    ui.pairCode.focus();
    return;
  }
  ui.codeError.textContent = '';
  ui.codeSubmit.disabled = true;
  try {
    await pairWithCode(code);
    ui.pairCode.value = '';
  } catch (err) {
    ui.codeError.textContent = err instanceof ApiError || err instanceof Error ? err.message : String(err);
    ui.pairCode.focus();
  } finally {
    ui.codeSubmit.disabled = false;
  }
}

export function initPairScreen(): void {
  ui.scanOpen.addEventListener('click', () => void scan());
  ui.scanStop.addEventListener('click', stopScan);
  ui.codeForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void submitCode();
  });
  ui.pairForm.addEventListener('submit', (e) => {
    e.preventDefault();
    try {
      const p = parsePairing(ui.pairJson.value);
      ui.pairJson.value = '';
      ui.pairError.textContent = '';
      void pairWithToken(p);
    } catch (err) {
      ui.pairError.textContent = err instanceof Error ? err.message : String(err);
      ui.pairJson.focus();
    }
  });
}

