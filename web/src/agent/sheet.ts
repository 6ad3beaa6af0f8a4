/** A sheet of the agent's screens: a dialog from the bottom with its title and ✕ (ui/layer opens and closes it). */
import { el } from '../dom';
import { closeLayer } from '../ui/layer';
import { closeIcon } from './glyphs';
import { iconButton } from '../ui/icons';

export function agentSheet(className: string, titleText: string, titleId: string): HTMLElement {
  const sheet = el('section', `sheet ${className}`);
  sheet.hidden = true;
  sheet.setAttribute('role', 'dialog');
  sheet.setAttribute('aria-modal', 'true');
  const head = el('div', 'sheet-head');
  const title = el('h2', '', titleText);
  title.id = titleId;
  sheet.setAttribute('aria-labelledby', title.id);
  const close = iconButton('trash', 'Close', '', closeLayer);
  close.replaceChildren(closeIcon());
  head.append(title, close);
  sheet.append(head);
  return sheet;
}
