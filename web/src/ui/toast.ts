/** A short message at the bottom with one action (Undo), gone after a few seconds. */
import { ui } from '../dom';

let timer: ReturnType<typeof setTimeout> | undefined;
let action: (() => void) | null = null;

export function showToast(text: string, undo?: () => void, ms = 6000): void {
  clearTimeout(timer);
  ui.toastText.textContent = text;
  action = undo ?? null;
  ui.toastUndo.hidden = !undo;
  ui.toast.hidden = false;
  timer = setTimeout(hideToast, ms);
}

export function hideToast(): void {
  clearTimeout(timer);
  action = null;
  ui.toast.hidden = true;
}

export function initToast(): void {
  ui.toastUndo.addEventListener('click', () => {
    const run = action;
    hideToast();
    run?.();
  });
}
