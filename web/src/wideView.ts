/** "Full width" (wide.ts): a block wider than the screen, over the whole screen, as a clone of the sanitised reply's own element. */
import { el } from './dom';
import { icon } from './ui/icons';
import { closeLayer, openLayer } from './ui/layer';

let view: { layer: HTMLElement; body: HTMLElement } | undefined;

function wideView(): NonNullable<typeof view> {
  if (view) return view;
  const layer = el('section', 'sheet wide-view');
  layer.hidden = true;
  layer.setAttribute('role', 'dialog');
  layer.setAttribute('aria-modal', 'true');
  layer.setAttribute('aria-label', 'Full width');
  const head = el('div', 'sheet-head');
  const close = el('button', 'icon');
  close.type = 'button';
  close.setAttribute('aria-label', 'Close full width');
  const x = icon('back');
  x.firstElementChild!.setAttribute('d', 'M6 6l12 12M18 6 6 18');
  close.append(x);
  close.addEventListener('click', closeLayer);
  head.append(el('h2', '', 'Full width'), close);
  const body = el('div', 'wide-body reply');
  // It scrolls both ways: reachable by keyboard too.
  body.tabIndex = 0;
  body.setAttribute('role', 'region');
  body.setAttribute('aria-label', 'Content, full width');
  layer.append(head, body);
  document.body.append(layer);
  view = { layer, body };
  return view;
}

export function openWide(box: HTMLElement, opener: HTMLElement): void {
  const v = wideView();
  v.body.replaceChildren(box.cloneNode(true));
  openLayer(v.layer, opener, () => v.body.replaceChildren());
}
