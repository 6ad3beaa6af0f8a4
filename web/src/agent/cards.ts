/**
 * The agent's transcript items: a tool call as a compact card (icon, tool, path or query; tap to
 * see its input and output, long output folded) and an approval as a card that cannot be missed
 * (the whole diff or exact command, wrapped, never in a scroll box of its own; Allow / Deny /
 * Allow for the session, saying what that grants; the decision kept on it). Everything the model
 * or a tool said goes in as text (textContent), never as markup.
 */
import { el } from '../dom';
import { icon, type IconName } from '../ui/icons';
import type { Decision, PendingApproval } from '../../../server/src/protocol';
import { diffPath, diffView } from './diff';
import { DigestMismatchError, digestMatches, DIGEST_MISMATCH_MESSAGE } from './sign';

const FOLD_LINES = 12;

const TOOL_ICONS: Record<string, IconName> = {
  read_file: 'file',
  list_files: 'folder',
  search: 'search',
  git_diff: 'file',
  diagnostics: 'search',
  edit_file: 'edit',
  write_file: 'edit',
  run_command: 'terminal',
};

/** What a call is about, in a few words: its path, query or command. */
export function subjectOf(input: Record<string, unknown>): string {
  for (const key of ['command', 'path', 'query', 'pattern']) {
    const v = input[key];
    if (typeof v === 'string' && v) return v;
  }
  return '';
}

/** Text in a <pre>, its first lines shown and the rest behind "Show all N lines". */
function folded(text: string, className: string): HTMLElement {
  const box = el('div', className);
  const lines = text.split('\n');
  const pre = el('pre', '', lines.length > FOLD_LINES ? lines.slice(0, FOLD_LINES).join('\n') : text);
  box.append(pre);
  if (lines.length > FOLD_LINES) {
    const more = el('button', 'link more', `Show all ${lines.length} lines`);
    more.type = 'button';
    more.addEventListener('click', () => {
      pre.textContent = text;
      more.remove();
    });
    box.append(more);
  }
  return box;
}

export interface ToolCard {
  li: HTMLLIElement;
  result(ok: boolean, output: string, denied: boolean): void;
}

export function toolCard(callId: string, tool: string, input: Record<string, unknown>): ToolCard {
  const li = el('li', 'tool-card');
  li.dataset.callId = callId;
  const details = el('details');
  const summary = el('summary');
  const subject = subjectOf(input);
  summary.append(icon(TOOL_ICONS[tool] ?? 'tool'), el('span', 'tool-name', tool), el('span', 'tool-subject', subject));
  const state = el('span', 'tool-state', '…');
  state.setAttribute('aria-label', 'running');
  summary.append(state);
  details.append(summary, el('p', 'tool-label', 'Input'), folded(JSON.stringify(input, null, 2), 'tool-io'));
  li.append(details);
  return {
    li,
    result(ok, output, denied) {
      state.textContent = denied ? 'denied' : ok ? '✓' : 'failed';
      state.setAttribute('aria-label', denied ? 'denied' : ok ? 'done' : 'failed');
      li.classList.add(denied ? 'denied' : ok ? 'ok' : 'failed');
      details.append(el('p', 'tool-label', 'Output'), folded(output, 'tool-io'));
    },
  };
}

const DECIDED: Record<Decision, string> = {
  allow: 'Allowed',
  deny: 'Denied',
  allow_session: 'Allowed for this session',
};

/** What the decide callback settles with: `already` when the call was decided elsewhere first (409). */
export type Answered = 'done' | 'already';

export interface ApprovalCard {
  li: HTMLLIElement;
  decided(decision: Decision): void;
  /** True until a decision is shown. */
  readonly open: boolean;
  focus(): void;
}

/** An approval as a card shows it: the protocol's, its digest absent from a relay before issue 36. */
export type ApprovalData = Omit<PendingApproval, 'digest'> & Partial<Pick<PendingApproval, 'digest'>>;

/** What "allow for the session" grants, said on its button (the relay's rules, docs/agent.md). */
function sessionLabel(a: ApprovalData): string {
  if (a.command !== undefined) return 'Allow this exact command until a file changes';
  if (a.diff !== undefined) return 'Allow every edit in this session';
  return 'Allow this tool for this session';
}

/** True when `e` is on screen from top to bottom, nothing fixed over its ends. */
function whollyOnScreen(e: Element): boolean {
  const r = e.getBoundingClientRect();
  if (r.top < 0 || r.bottom > window.innerHeight) return false;
  const x = r.left + Math.min(r.width / 2, 8);
  return [r.top + 1, r.bottom - 1].every((y) => e.contains(document.elementFromPoint(x, y)));
}

export function approvalCard(a: ApprovalData, folder: string, decide: (d: Decision) => Promise<Answered>): ApprovalCard {
  // A list item holding the group: a list's items must stay list items for screen readers.
  const li = el('li', 'approval-item');
  li.dataset.callId = a.callId;
  const box = el('div', 'approval');
  li.append(box);
  const headingId = `approval-${a.callId.replace(/[^\w-]/g, '_')}`;
  box.setAttribute('role', 'group');
  box.setAttribute('aria-labelledby', headingId);
  const heading = el('h3', 'approval-title');
  heading.id = headingId;
  // Focused in place of Allow when the card does not fit on screen.
  heading.tabIndex = -1;
  let shown: HTMLElement;
  if (a.command !== undefined) {
    heading.textContent = 'Run this command?';
    shown = el('pre', 'command', a.command);
    box.append(heading, shown);
    const where = el('p', 'approval-where');
    where.append(icon('folder'), el('span', '', `in ${folder}`));
    box.append(where);
  } else if (a.diff !== undefined) {
    const path = diffPath(a.diff) || subjectOf(a.input);
    heading.textContent = a.tool === 'write_file' ? 'Write this file?' : 'Make this edit?';
    shown = diffView(a.diff);
    box.append(heading, el('p', 'approval-path', path), shown);
  } else {
    heading.textContent = `Use ${a.tool}?`;
    shown = el('pre', 'command', JSON.stringify(a.input, null, 2));
    box.append(heading, shown);
  }
  if (a.reason) heading.after(el('p', 'approval-reason', a.reason));
  const buttons = el('div', 'approval-buttons');
  let open = true;
  const outcome = el('p', 'approval-outcome');
  outcome.setAttribute('role', 'status');
  outcome.hidden = true;
  const make = (decision: Decision, label: string, cls: string) => {
    const b = el('button', cls, label);
    b.type = 'button';
    b.addEventListener('click', () => {
      for (const x of buttons.querySelectorAll('button')) x.disabled = true;
      decide(decision).then((answered) => {
        if (answered === 'already' && open) {
          // Decided on another screen (or stopped) first: the stream brings which way.
          open = false;
          buttons.remove();
          box.classList.add('decided');
          outcome.hidden = false;
          outcome.className = 'approval-outcome';
          outcome.textContent = 'Already decided';
        }
      }, (err: unknown) => {
        // A card whose digest is not what it shows stays unanswerable here; other failures may be tried again.
        if (err instanceof DigestMismatchError) box.classList.add('tampered');
        else for (const x of buttons.querySelectorAll('button')) x.disabled = false;
        outcome.hidden = false;
        outcome.className = 'approval-outcome error';
        outcome.textContent = err instanceof Error ? err.message : String(err);
      });
    });
    return b;
  };
  buttons.append(make('allow', 'Allow', 'primary'), make('deny', 'Deny', 'danger'), make('allow_session', sessionLabel(a), 'ghost'));
  box.append(buttons, outcome);
  // Checked as the card appears too, so a card whose digest is not what it shows says so before
  // anyone taps (signing checks again and refuses).
  if (a.digest !== undefined) {
    void digestMatches(a).then((ok) => {
      if (ok || !open) return;
      for (const x of buttons.querySelectorAll('button')) x.disabled = true;
      box.classList.add('tampered');
      outcome.hidden = false;
      outcome.className = 'approval-outcome error';
      outcome.textContent = DIGEST_MISMATCH_MESSAGE;
    });
  }
  return {
    li,
    get open() {
      return open;
    },
    decided(decision) {
      open = false;
      buttons.remove();
      box.classList.add('decided', decision === 'deny' ? 'denied' : 'allowed');
      outcome.hidden = false;
      outcome.className = 'approval-outcome';
      outcome.textContent = DECIDED[decision];
    },
    focus() {
      // A card taller than the screen is read from its top; Allow is focused only on a card
      // whose every line is on screen, so Enter never approves what was not seen.
      box.scrollIntoView({ block: box.getBoundingClientRect().height <= window.innerHeight ? 'center' : 'start' });
      if (open && whollyOnScreen(shown)) buttons.querySelector('button')?.focus({ preventScroll: true });
      else heading.focus({ preventScroll: true });
    },
  };
}
