import * as vscode from 'vscode';
import type { AgentDesk } from '../agentView';

const t = vscode.l10n.t;

/** The Agent Sessions view's commands: a new session at the desk, a row's Stop and Delete, a proposed edit's Allow and Deny. */
export class AgentCommands {
  constructor(private readonly desk: AgentDesk) {}

  /** Asks for the folder (when more than one) and the prompt; resolves with the new session's id. */
  async newSession(folder?: string, prompt?: string): Promise<string | undefined> {
    const folders = this.desk.folders();
    if (folders.length === 0) {
      void vscode.window.showWarningMessage(t('The workspace agent is off. Turn on deskrelay.agent.enabled (in a remote window: in the Remote settings) in a trusted workspace.'));
      return undefined;
    }
    const where = folder ?? (folders.length === 1 ? folders[0] : await vscode.window.showQuickPick(folders, { title: t('New Agent Session'), placeHolder: t('The folder the agent works in') }));
    if (!where) return undefined;
    const what = prompt ?? (await vscode.window.showInputBox({ title: t('New Agent Session'), prompt: t('What should the agent do in {0}?', where), ignoreFocusOut: true }));
    if (!what?.trim()) return undefined;
    const id = this.desk.newSession(where, what.trim());
    if (!id) void vscode.window.showWarningMessage(t('No session was started: start Remote Chat first, or stop or delete a busy session.'));
    return id;
  }

  stop(id: unknown): void {
    if (typeof id === 'string') this.desk.session(id)?.stop();
  }

  async remove(id: unknown, confirmed?: boolean): Promise<boolean> {
    const session = typeof id === 'string' ? this.desk.session(id) : undefined;
    if (!session) return false;
    const sure = confirmed === true || (await vscode.window.showWarningMessage(t('Delete the agent session "{0}"? It is stopped and forgotten, here and on the phone.', session.title), { modal: true }, t('Delete'))) === t('Delete');
    return sure && this.desk.delete(session.id);
  }
}
