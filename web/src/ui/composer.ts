/**
 * The composer's text box grows with its text up to a limit (then scrolls), with no resize
 * handle; Send and Stop share one place (an arrow, a square while a reply streams).
 */
import { ui } from '../dom';

/** At most this share of the screen's height, so the conversation stays in view. */
const MAX_SHARE = 0.4;

export function fitComposer(): void {
  const box = ui.message;
  // Not laid out (the chat screen is hidden): measured when it shows.
  if (!box.offsetParent) return;
  box.style.height = 'auto';
  const max = Math.max(96, Math.round(window.innerHeight * MAX_SHARE));
  box.style.height = `${Math.min(box.scrollHeight + 2, max)}px`;
  box.style.overflowY = box.scrollHeight + 2 > max ? 'auto' : 'hidden';
}

export function initComposer(): void {
  ui.message.addEventListener('input', fitComposer);
  window.addEventListener('resize', fitComposer);
  fitComposer();
}
