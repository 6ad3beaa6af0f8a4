/**
 * A text box that grows with its text up to a limit (then scrolls), with no resize handle: the
 * chat's composer, and any later screen's (the agent's prompt). Send and Stop share one place
 * (render.ts setStreaming: an arrow, a square while a reply streams).
 */
import { ui } from '../dom';

/** At most this share of the screen's height, so the conversation stays in view. */
const MAX_SHARE = 0.4;

/** Fits `box` to its text; a box not laid out yet (its screen hidden) is measured when shown. */
export function fitToText(box: HTMLTextAreaElement): void {
  if (!box.offsetParent) return;
  box.style.height = 'auto';
  const max = Math.max(96, Math.round(window.innerHeight * MAX_SHARE));
  box.style.height = `${Math.min(box.scrollHeight + 2, max)}px`;
  box.style.overflowY = box.scrollHeight + 2 > max ? 'auto' : 'hidden';
}

export function autoGrow(box: HTMLTextAreaElement): () => void {
  const fit = () => fitToText(box);
  box.addEventListener('input', fit);
  window.addEventListener('resize', fit);
  fit();
  return fit;
}

/** The chat's composer. */
export const fitComposer = (): void => fitToText(ui.message);

export function initComposer(): void {
  autoGrow(ui.message);
}
