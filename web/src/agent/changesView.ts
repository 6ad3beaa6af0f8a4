/**
 * A session's changes in one place (issue 38): every file it changed, its diff below its name
 * (together, the session's combined diff), and Undo per file, which puts the file back as it
 * was before the session's first change to it. Undo asks no approval (it takes back only what the
 * session did) but is signed by this phone's key; the desk refuses it, and this says why, when
 * the file changed outside the session since.
 */
import { el } from '../dom';
import { openLayer } from '../ui/layer';
import { showToast } from '../ui/toast';
import { agentApi, type FileChange, type SessionChanges } from './api';
import { diffView } from './diff';
import { agentSheet } from './sheet';
import { agent, messageOf } from './state';

const KIND_WORDS: Record<FileChange['kind'], string> = { created: 'new file', modified: 'changed', deleted: 'deleted' };

/** Opens the view; shown in the session's tools row. */
export const changesButton = el('button', 'agent-changes-open', 'Changes');
changesButton.type = 'button';

const sheet = agentSheet('agent-changes', 'Changes', 'agent-changes-title');
const summary = el('p', 'hint agent-changes-summary');
summary.setAttribute('aria-live', 'polite');
const error = el('p', 'error');
error.setAttribute('role', 'alert');
const files = el('ul', 'agent-change-files');
files.setAttribute('aria-label', 'Changed files');
sheet.append(summary, error, files);

/** The sheet joins the page (initAgent). */
export function mountChanges(): void {
  document.body.append(sheet);
  changesButton.addEventListener('click', () => void openChanges());
}

async function openChanges(): Promise<void> {
  const id = agent.current?.id;
  if (!id) return;
  error.textContent = '';
  summary.textContent = 'Loading the session\u2019s changes\u2026';
  files.replaceChildren();
  openLayer(sheet, changesButton);
  try {
    show(id, await agentApi.changes(id));
  } catch (err) {
    summary.textContent = '';
    error.textContent = messageOf(err);
  }
}

function show(id: string, changes: SessionChanges): void {
  const n = changes.files.length;
  summary.textContent = n === 0 ? 'This session has changed no files (or every change was undone).' : `${n} file${n === 1 ? '' : 's'} changed by this session. Undo puts a file back as it was before the session changed it.`;
  files.replaceChildren(...changes.files.map((f) => fileItem(id, f)));
}

function fileItem(id: string, f: FileChange): HTMLLIElement {
  const li = el('li', `agent-change ${f.kind}`);
  const top = el('div', 'agent-change-head');
  const name = el('code', 'agent-change-path', f.path);
  const kind = el('span', 'agent-change-kind', KIND_WORDS[f.kind]);
  const undo = el('button', 'agent-undo', 'Undo');
  undo.type = 'button';
  undo.setAttribute('aria-label', `Undo ${f.path}`);
  top.append(name, kind, undo);
  const note = el('p', 'error agent-change-note');
  note.setAttribute('role', 'alert');
  // No button that can only be refused: a file changed since (or whose contents were not kept)
  // says why instead. Reopening the view after the outside change is undone offers Undo again.
  if (f.changedOutside) note.textContent = 'Changed outside this session since its last change: Undo would lose that, so the desk refuses it.';
  if (f.notUndoable) note.textContent = f.notUndoable;
  undo.hidden = f.changedOutside || !!f.notUndoable;
  undo.addEventListener('click', () => {
    undo.disabled = true;
    agentApi.undo(id, f).then(
      (left) => {
        showToast(`${f.path} is back as it was before the session.`);
        if (agent.current?.id === id) show(id, left);
      },
      (err: unknown) => {
        note.textContent = messageOf(err);
        undo.disabled = false;
      },
    );
  });
  li.append(top, note, diffView(f.diff));
  return li;
}
