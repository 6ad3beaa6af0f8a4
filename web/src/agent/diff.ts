/**
 * A unified diff as the phone shows it: one row per line with its old and new line numbers,
 * added and removed lines coloured (and marked + / −, so colour is not the only sign), long lines
 * wrapped rather than scrolled sideways. Built with textContent only: a diff is file text.
 */
import { el } from '../dom';

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/;

export function diffView(diff: string): HTMLElement {
  const box = el('div', 'diff');
  box.setAttribute('role', 'table');
  box.setAttribute('aria-label', 'Changes');
  let oldNo = 0;
  let newNo = 0;
  const row = (kind: string, a: string, b: string, sign: string, text: string) => {
    const r = el('div', `dl ${kind}`);
    r.setAttribute('role', 'row');
    const cells = [el('span', 'ln', a), el('span', 'ln', b), el('span', 'sign', sign), el('span', 'code', text)];
    for (const c of cells) c.setAttribute('role', 'cell');
    cells[2]!.setAttribute('aria-label', sign === '+' ? 'added' : sign === '−' ? 'removed' : '');
    r.append(...cells);
    box.append(r);
  };
  const lines = diff.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const line of lines) {
    if (line.startsWith('--- ') || line.startsWith('+++ ')) continue;
    const hunk = HUNK.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      row('hunk', '', '', '', line);
    } else if (line.startsWith('+')) row('add', '', String(newNo++), '+', line.slice(1));
    else if (line.startsWith('-')) row('del', String(oldNo++), '', '−', line.slice(1));
    else if (line.startsWith('\\')) row('meta', '', '', '', line);
    else row('ctx', String(oldNo++), String(newNo++), '', line.slice(1));
  }
  return box;
}

/** The file the diff changes (its `+++ b/…` line, or `--- a/…` for a deletion). */
export function diffPath(diff: string): string {
  const plus = /^\+\+\+ (?:b\/)?(.+)$/m.exec(diff)?.[1];
  if (plus && plus !== '/dev/null') return plus;
  return /^--- (?:a\/)?(.+)$/m.exec(diff)?.[1] ?? '';
}
