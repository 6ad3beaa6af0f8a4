import * as vscode from 'vscode';
import { unifiedDiff, type PendingApproval } from '../../server/src';
import type { AppliedEdit } from './agentEdits';
import type { VsCodeWorkspace } from './agentWorkspace';

const t = vscode.l10n.t;
/** Read-only texts the diff editors show: an edit's own before and after. */
export const TEXT_SCHEME = 'deskrelay-agent';
/** A proposed change's text, nothing written yet; its editor offers Allow and Deny. */
export const PROPOSED_SCHEME = 'deskrelay-agent-proposed';
const KEEP = 200;

/** Where diff editors open: beside the session's webview, never over a waiting approval. */
const BESIDE: vscode.TextDocumentShowOptions = { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true };

/** The session and call a proposed-change document is about (from its URI). */
export function proposedCall(uri: vscode.Uri | undefined): { session: string; callId: string } | undefined {
  if (uri?.scheme !== PROPOSED_SCHEME) return undefined;
  const [session, callId] = uri.query.split('/');
  return session && callId ? { session, callId } : undefined;
}

/** The agent's edits as diff editors: an applied edit's own before and after; a proposed change against the file as it is. */
export class AgentDiffs implements vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private seq = 0;
  private readonly registrations: vscode.Disposable[];

  constructor() {
    const provider = { provideTextDocumentContent: (uri: vscode.Uri) => this.texts.get(uri.query) ?? '' };
    this.registrations = [
      vscode.workspace.registerTextDocumentContentProvider(TEXT_SCHEME, provider),
      vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, provider),
    ];
  }

  private doc(scheme: string, path: string, text: string, prefix = ''): vscode.Uri {
    const key = `${prefix}${++this.seq}`;
    this.texts.set(key, text);
    if (this.texts.size > KEEP) this.texts.delete(this.texts.keys().next().value!);
    return vscode.Uri.from({ scheme, path: `/${path}`, query: key });
  }

  /** An applied edit: its own text before (empty for a new file) and after, whatever the file holds now. */
  async applied(edit: AppliedEdit, path: string): Promise<void> {
    const before = this.doc(TEXT_SCHEME, path, edit.before ?? '');
    const after = this.doc(TEXT_SCHEME, path, edit.after);
    await vscode.commands.executeCommand('vscode.diff', before, after, t('{0} (the agent\u2019s edit)', path), BESIDE);
  }

  /**
   * A waiting edit: the file as it is (its editor text, unsaved changes included) against the
   * text the edit would make, nothing written. Resolves with why not when the file changed since
   * the card was made (the diff would not be the card's).
   */
  async proposed(session: string, approval: PendingApproval, workspace: VsCodeWorkspace): Promise<string | undefined> {
    const path = typeof approval.input.path === 'string' ? approval.input.path : undefined;
    if (!path || approval.diff === undefined) return t('This card is not an edit.');
    const now = await workspace.readIfExists(path);
    const after = proposedText(approval, now);
    if (after === undefined || unifiedDiff(path, now, after) !== approval.diff) return t('{0} changed since this card was made; the edit will be refused if you allow it.', path);
    const file = vscode.Uri.joinPath(workspace.folder.uri, ...path.split('/'));
    const left = now === undefined ? this.doc(TEXT_SCHEME, path, '') : file;
    const right = this.doc(PROPOSED_SCHEME, path, after, `${session}/${approval.callId}/`);
    await vscode.commands.executeCommand('vscode.diff', left, right, t('{0} (the agent\u2019s proposed edit)', path), BESIDE);
    return undefined;
  }

  dispose(): void {
    for (const r of this.registrations) r.dispose();
  }
}

/** The text an edit_file or write_file call would leave, from the file as it is. */
function proposedText(approval: PendingApproval, now: string | undefined): string | undefined {
  const input = approval.input;
  if (approval.tool === 'write_file') return typeof input.content === 'string' ? input.content : undefined;
  if (approval.tool !== 'edit_file' || now === undefined || typeof input.old !== 'string') return undefined;
  const at = now.indexOf(input.old);
  if (at < 0) return undefined;
  return now.slice(0, at) + (typeof input.new === 'string' ? input.new : '') + now.slice(at + input.old.length);
}
