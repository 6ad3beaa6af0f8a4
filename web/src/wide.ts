/**
 * Code and tables wider than the screen (issue 38): they scroll sideways inside the reply, and
 * that has to be seen: the cut edge carries a shadow (app.css `.wide`, drawn by the scroller's own
 * background so it goes when the end is reached), and "Full width" opens the block over the whole
 * screen. The copy shown there is a clone of the sanitised reply's own element: nothing new of the
 * model's becomes markup.
 */
import { el, ui } from './dom';

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
    // The full-width view is its own chunk: most replies never need it.
    open.addEventListener('click', () => void import('./wideView').then((m) => m.openWide(box, open), () => undefined));
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
