/**
 * Layers over the screen: the chats drawer (from the left) and sheets (from the bottom). One is
 * open at a time, over a scrim; Escape, the scrim or its close button closes it, and focus goes
 * back to the button that opened it. Reusable by any screen that needs a drawer or a sheet.
 */
import { ui } from '../dom';

interface Open {
  layer: HTMLElement;
  opener: HTMLElement | null;
  onClose?: () => void;
}

let open: Open | null = null;

export function isOpen(layer: HTMLElement): boolean {
  return open?.layer === layer;
}

export function openLayer(layer: HTMLElement, opener: HTMLElement | null, onClose?: () => void): void {
  if (open) closeLayer();
  open = { layer, opener, onClose };
  layer.hidden = false;
  ui.scrim.hidden = false;
  opener?.setAttribute('aria-expanded', 'true');
  // The page behind is out of reach for touch, keyboard and screen readers while a layer is open.
  document.querySelector('main')?.setAttribute('inert', '');
  document.querySelector('header')?.setAttribute('inert', '');
  const first = layer.querySelector<HTMLElement>('button, [href], input, textarea, select');
  first?.focus();
}

export function closeLayer(): void {
  if (!open) return;
  const { layer, opener, onClose } = open;
  open = null;
  layer.hidden = true;
  ui.scrim.hidden = true;
  opener?.setAttribute('aria-expanded', 'false');
  document.querySelector('main')?.removeAttribute('inert');
  document.querySelector('header')?.removeAttribute('inert');
  onClose?.();
  if (opener && !opener.hidden) opener.focus();
}

export function initLayers(): void {
  ui.scrim.addEventListener('click', closeLayer);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && open) {
      e.preventDefault();
      closeLayer();
    }
  });
}
