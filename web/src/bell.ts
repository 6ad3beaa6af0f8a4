/** "Notify me when a reply is ready" in the settings sheet: the user's own tap asks the browser for permission. */
import { app } from './app';
import { ui } from './dom';
import { PUSH_UNAVAILABLE, pushSupport, pushWanted, renewPush, turnPushOff, turnPushOn } from './push';

function pushNote(text: string): void {
  ui.pushNote.textContent = text;
  ui.pushNote.hidden = !text;
}

export function showBell(): void {
  const support = pushSupport();
  const on = support === 'ok' && pushWanted() && Notification.permission === 'granted';
  ui.pushBell.hidden = false;
  ui.pushBell.classList.toggle('unavailable', support !== 'ok');
  ui.pushBell.setAttribute('aria-pressed', String(on));
  const label = support !== 'ok' ? 'Notifications are not available here' : on ? 'Notifications on: tap to turn off' : 'Notify me when a reply is ready';
  ui.pushBell.textContent = label;
  ui.pushBell.setAttribute('aria-label', label);
  ui.pushBell.title = label;
}

export function hideBell(): void {
  ui.pushBell.hidden = true;
  pushNote('');
}

async function bellTapped(): Promise<void> {
  const support = pushSupport();
  if (support !== 'ok') return pushNote(PUSH_UNAVAILABLE[support]);
  ui.pushBell.disabled = true;
  try {
    if (ui.pushBell.getAttribute('aria-pressed') === 'true') {
      await turnPushOff(app.pairing?.token ?? null);
      pushNote('Notifications are off.');
    } else {
      if (!app.pairing) return;
      await turnPushOn(app.pairing.token);
      pushNote('You will be notified when a reply finishes while DeskRelay is in the background.');
    }
  } catch (err) {
    pushNote(err instanceof Error ? err.message : String(err));
  } finally {
    ui.pushBell.disabled = false;
    showBell();
  }
}

/** Each connection: the desktop's subscriptions belong to its token, so ours is posted again (no prompt). */
export function renewPushAfterConnect(token: string): void {
  showBell();
  void renewPush(token).then(
    () => showBell(),
    (err: unknown) => pushNote(err instanceof Error ? `Notifications: ${err.message}` : String(err)),
  );
}

export function initBell(): void {
  ui.pushBell.addEventListener('click', () => void bellTapped());
}
