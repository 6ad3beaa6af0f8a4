import * as vscode from 'vscode';
import { reverseDiff, unifiedDiff } from '../../server/src';

/** One edit the agent applied, as VS Code applied it: its own text before and after. */
export interface AppliedEdit {
  /** The workspace folder's path on disk (two folders may hold the same diff). */
  root: string;
  uri: vscode.Uri;
  /** undefined: the edit created the file. */
  before: string | undefined;
  after: string;
  /** The diff the session showed (the same text unifiedDiff made for the card). */
  diff: string;
}

const t = vscode.l10n.t;
const KEEP = 500;

/**
 * The agent's applied edits in this window, each with its own before and after (so its diff is
 * always its own, whatever happened to the file since), the revert, and Undo in the editor seen
 * as one: a document whose Undo brings it back to an edit's "before" reports that edit.
 */
export class AppliedEdits implements vscode.Disposable {
  private readonly list: AppliedEdit[] = [];
  private readonly undone = new vscode.EventEmitter<AppliedEdit>();
  /** An edit the user took back with Undo in its editor. */
  readonly onUndo = this.undone.event;
  private readonly watch: vscode.Disposable;

  constructor() {
    this.watch = vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.reason !== vscode.TextDocumentChangeReason.Undo) return;
      const text = e.document.getText();
      const edit = this.list.findLast((x) => x.uri.fsPath === e.document.uri.fsPath);
      if (edit && edit.before === text) this.undone.fire(edit);
    });
  }

  /** Called as the workspace writes: `before` is the text the edit replaced. */
  record(root: string, path: string, uri: vscode.Uri, before: string | undefined, after: string): void {
    this.list.push({ root, uri, before, after, diff: unifiedDiff(path, before, after) });
    if (this.list.length > KEEP) this.list.shift();
  }

  /** The applied edit whose diff is `diff` in the folder at `root` (the latest such). */
  find(root: string, diff: string): AppliedEdit | undefined {
    return this.list.findLast((x) => x.root === root && x.diff === diff);
  }

  /**
   * Takes the edit back in the editor (a WorkspaceEdit, so Undo works on it too): the file as it
   * is must still hold the edit. Saved unless the file had unsaved changes of the user's.
   * Resolves with why not, or undefined when done.
   */
  async revert(edit: AppliedEdit): Promise<string | undefined> {
    const doc = await vscode.workspace.openTextDocument(edit.uri).then(
      (d) => d,
      () => undefined,
    );
    if (!doc) return t('{0} is gone; there is nothing to revert.', vscode.workspace.asRelativePath(edit.uri));
    const now = doc.getText();
    if (edit.before === undefined && now === edit.after && !doc.isDirty) {
      // The agent made the file: taking the edit back removes it.
      const remove = new vscode.WorkspaceEdit();
      remove.deleteFile(edit.uri);
      return (await vscode.workspace.applyEdit(remove)) ? undefined : t('VS Code did not apply the revert.');
    }
    const back = now === edit.after ? (edit.before ?? '') : reverseDiff(edit.diff, now);
    if (back === undefined) return t('{0} changed since the agent\u2019s edit; revert it by hand (or with Undo).', vscode.workspace.asRelativePath(edit.uri));
    const dirty = doc.isDirty;
    const change = new vscode.WorkspaceEdit();
    change.replace(edit.uri, new vscode.Range(doc.positionAt(0), doc.positionAt(now.length)), back);
    if (!(await vscode.workspace.applyEdit(change))) return t('VS Code did not apply the revert.');
    if (!dirty && doc.isDirty) await doc.save();
    return undefined;
  }

  dispose(): void {
    this.watch.dispose();
    this.undone.dispose();
  }
}
