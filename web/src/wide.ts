/**
 * Code and tables wider than the screen (issue 38): they scroll sideways inside the reply, and
 * that has to be seen: the cut edge carries a shadow (app.css `.wide`, drawn by the scroller's own
 * background so it goes when the end is reached), and "Full width" opens the block over the whole
 * screen. The copy shown there is a clone of the sanitised reply's own element: nothing new of the
 * model's becomes markup.
 */
import { el, ui } from './dom';
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

function openWide(box: HTMLElement, opener: HTMLElement): void {
  const v = wideView();
  v.body.replaceChildren(box.cloneNode(true));
  openLayer(v.layer, opener, () => v.body.replaceChildren());
}

/** Code and tables scroll sideways, so a keyboard must be able to reach them (axe: scrollable-region-focusable). */
export function focusableScrollers(root: HTMLElement): void {
  for (const box of root.querySelectorAll<HTMLElement>('pre, table')) box.tabIndex = 0;
}

/** Marks each code block and table in `root` that is wider than its column, and gives it "Full width". */
export function markWide(root: HTMLElement): void {
  focusableScrollers(root);
  for (const box of root.querySelectorAll<HTMLElement>('pre, table')) {
    if (box.classList.contains('wide') || box.scrollWidth <= box.clientWidth + 1) continue;
    box.classList.add('wide');
    const open = el('button', 'wide-open', 'Full width');
    open.type = 'button';
    open.setAttribute('aria-label', box.tagName === 'TABLE' ? 'Open the table full width' : 'Open the code full width');
    open.addEventListener('click', () => openWide(box, open));
    const bar = box.parentElement?.classList.contains('code-block') ? box.parentElement.querySelector('.code-bar') : null;
    if (bar) bar.lastElementChild?.before(open);
    else {
      const tableBar = el('div', 'table-bar');
      tableBar.append(open);
      box.before(tableBar);
    }
  }
}

// A chat drawn while its screen was hidden measured nothing: measured again once it has a width.
if ('ResizeObserver' in window) new ResizeObserver(() => markWide(ui.log)).observe(ui.log);
