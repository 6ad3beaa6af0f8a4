/**
 * The agent at the desk (issues 25, 41): the DeskRelay activity-bar container's "Agent Sessions"
 * view (live, with a badge and row actions), a webview per session with the same live transcript
 * as the phone (approvals answerable here too, the first answer winning), diff editors for each
 * edit (proposed, before deciding; applied, its own before and after), the revert, and a
 * notification plus a status bar hint while an approval waits. Thin: it follows and answers the
 * door's own sessions in-process (server/src's SessionStore and AgentSession).
 */
import * as vscode from 'vscode';
import { NotPendingError, type AgentSession, type AgentStatus, type Decision, type PendingApproval } from '../../server/src';
import type { ExtensionAgentHost } from './agent';
import { AgentDiffs, proposedCall } from './agentDiffs';
import type { AppliedEdit } from './agentEdits';
import { AgentPanel } from './agentPanel';
import { Disposable } from './dispose';

const t = vscode.l10n.t;

const STATUS_ICON: Record<AgentStatus, vscode.ThemeIcon> = {
  running: new vscode.ThemeIcon('sync~spin'),
  waiting: new vscode.ThemeIcon('bell-dot', new vscode.ThemeColor('list.warningForeground')),
  idle: new vscode.ThemeIcon('check'),
  stopped: new vscode.ThemeIcon('debug-stop'),
  failed: new vscode.ThemeIcon('error', new vscode.ThemeColor('list.errorForeground')),
};

const statusWords = (s: AgentStatus) =>
  ({ running: t('working'), waiting: t('waiting for you'), idle: t('done'), stopped: t('stopped'), failed: t('failed') })[s];

export interface AgentSessionItem {
  id: string;
  label: string;
  description: string;
  status: AgentStatus;
  pending: number;
}

/** A notification's buttons; a choice is compared with the same string. */
const ALLOW = () => t('Allow');
const DENY = () => t('Deny');
const OPEN = () => t('Open');

/** What the DeskRelay view, its webviews, its diff editors and its attention signals share. */
export class AgentDesk extends Disposable implements vscode.TreeDataProvider<string> {
  private readonly changed = this.register(new vscode.EventEmitter<string | undefined>());
  readonly onDidChangeTreeData = this.changed.event;
  private readonly panels = new Map<string, AgentPanel>();
  private readonly hint = this.register(vscode.window.createStatusBarItem('deskrelay.agentWaiting', vscode.StatusBarAlignment.Right, 99));
  private readonly view: vscode.TreeView<string>;
  readonly diffs = this.register(new AgentDiffs());
  /** Approvals a notification was raised for (session/callId). */
  private readonly noticed = new Set<string>();
  private signature = '';
  /** How a waiting approval asks for attention (tests put a stand-in for VS Code's notification here). */
  notify: (message: string, ...items: string[]) => Thenable<string | undefined> = (message, ...items) => vscode.window.showWarningMessage(message, ...items);

  constructor(
    private readonly host: ExtensionAgentHost,
    private readonly extensionUri: vscode.Uri,
  ) {
    super();
    this.hint.name = t('DeskRelay Agent');
    this.view = this.register(vscode.window.createTreeView('deskrelay.agentSessions', { treeDataProvider: this }));
    this.register(host.onAttach(() => this.refresh()));
    this.register(host.edits.onUndo((edit) => this.undone(edit)));
    this.register(vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('deskrelay.agent.enabled') && this.refresh()));
    this.register(vscode.workspace.onDidGrantWorkspaceTrust(() => this.refresh()));
    // The store has no change events of its own, and following each session's events would
    // count as a client watching it (which holds back the phone's push): a light look each second.
    const timer = setInterval(() => this.refresh(), 1000);
    this.register({ dispose: () => clearInterval(timer) });
    this.register({ dispose: () => [...this.panels.values()].forEach((p) => p.dispose()) });
  }

  private sessions(): AgentSession[] {
    return this.host.store?.list() ?? [];
  }

  session(id: string): AgentSession | undefined {
    return this.host.store?.get(id);
  }

  /** True while the agent is off at the desk (the setting, or an untrusted workspace). */
  get off(): boolean {
    return this.host.workspaces().length === 0;
  }

  /** What the view says above its rows (also what the tests read): why there is no agent. */
  get message(): string | undefined {
    return this.view.message;
  }

  /** The number on the view (and its container) while approvals wait. */
  get badge(): vscode.ViewBadge | undefined {
    return this.view.badge;
  }

  /** The view's rows (also what the tests read). */
  items(): AgentSessionItem[] {
    return this.sessions().map((s) => ({
      id: s.id,
      label: s.title || t('Untitled session'),
      description: `${s.folder} · ${statusWords(s.status)}${s.pendingCount ? ` · ${t('{0} waiting', s.pendingCount)}` : ''}`,
      status: s.status,
      pending: s.pendingCount,
    }));
  }

  refresh(): void {
    const off = this.off;
    // Off at the desk ends every session at once, on every screen (the door would at its next request).
    if (off && this.sessions().length) this.host.store?.closeAll();
    const message = off
      ? t('The workspace agent is off. It is on while the setting deskrelay.agent.enabled is on in your user settings (in a remote window such as code-server or Remote-SSH: the Remote settings), in a trusted workspace.')
      : undefined;
    if (this.view.message !== message) this.view.message = message;
    this.attend();
    const items = this.items();
    const signature = JSON.stringify(items);
    if (signature === this.signature) return;
    this.signature = signature;
    this.changed.fire(undefined);
    const waiting = items.filter((i) => i.pending > 0);
    const count = waiting.reduce((n, i) => n + i.pending, 0);
    this.view.badge = count ? { value: count, tooltip: t('{0} waiting for you', count) } : undefined;
    if (waiting.length) {
      this.hint.text = `$(bell-dot) ${t('Agent waits for you')}`;
      this.hint.tooltip = t('An edit or a command of the DeskRelay agent waits for your answer: {0}', waiting.map((w) => w.label).join(', '));
      this.hint.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      this.hint.command = { command: 'deskrelay.agent.open', title: t('Open'), arguments: [waiting[0]!.id] };
      this.hint.show();
    } else this.hint.hide();
  }

  /** A notification for each approval newly waiting, unless its session's webview is in front. */
  private attend(): void {
    const waiting = new Set(this.sessions().flatMap((s) => s.gate.pending.map((a) => `${s.id}/${a.callId}`)));
    for (const key of this.noticed) if (!waiting.has(key)) this.noticed.delete(key);
    for (const session of this.sessions()) {
      for (const approval of session.gate.pending) {
        const key = `${session.id}/${approval.callId}`;
        if (this.noticed.has(key)) continue;
        this.noticed.add(key);
        if (this.panels.get(session.id)?.active) continue;
        void this.notify(t('DeskRelay agent ({0}): {1}', session.title || session.folder, asks(approval)), ALLOW(), DENY(), OPEN()).then((choice) => {
          if (choice === OPEN()) this.open(session.id);
          else if (choice === ALLOW() || choice === DENY()) this.decide(session, approval.callId, choice === ALLOW() ? 'allow' : 'deny');
        });
      }
    }
  }

  /** A decision from outside the webview (a notification, a diff editor's title). */
  decide(session: AgentSession, callId: string, decision: Decision): boolean {
    try {
      session.decide(callId, decision);
      return true;
    } catch (err) {
      if (!(err instanceof NotPendingError)) throw err;
      void vscode.window.showInformationMessage(t('Already answered (on the phone, or the session was stopped).'));
      return false;
    }
  }

  getChildren(element?: string): string[] {
    return element ? [] : this.items().map((i) => i.id);
  }

  getTreeItem(id: string): vscode.TreeItem {
    const item = this.items().find((i) => i.id === id);
    const tree = new vscode.TreeItem(item?.label ?? id);
    tree.id = id;
    tree.description = item?.description;
    // The whole row, never cut off: title, folder, status and what waits.
    tree.tooltip = item ? `${item.label}\n${item.description}` : undefined;
    tree.iconPath = item ? STATUS_ICON[item.status] : undefined;
    tree.contextValue = item && (item.status === 'running' || item.status === 'waiting') ? 'agentSession.busy' : 'agentSession';
    tree.command = { command: 'deskrelay.agent.open', title: t('Open'), arguments: [id] };
    return tree;
  }

  /** Opens (or shows) the session's webview. */
  open(id: string): AgentPanel | undefined {
    const existing = this.panels.get(id);
    if (existing) {
      existing.reveal();
      return existing;
    }
    const session = this.session(id);
    if (!session) {
      void vscode.window.showWarningMessage(t('That agent session is gone (deleted, or the relay restarted).'));
      return undefined;
    }
    const panel = new AgentPanel(
      session,
      this.extensionUri,
      {
        diff: (callId) => this.openDiff(session, callId),
        proposed: (callId) => this.openProposed(session, callId),
        revert: (callId) => this.revert(session, callId),
        endedWhy: () =>
          this.off
            ? t('This session ended: the workspace agent was turned off at the desk (the setting deskrelay.agent.enabled, or workspace trust).')
            : t('This session ended (deleted, or the relay stopped).'),
        askNote: () => vscode.window.showInputBox({ title: t('Deny and say why'), prompt: t('The model gets this note with the denial.'), ignoreFocusOut: true }),
      },
      () => this.panels.delete(id),
    );
    this.panels.set(id, panel);
    return panel;
  }

  panel(id: string): AgentPanel | undefined {
    return this.panels.get(id);
  }

  /** The applied edit behind a session's call, with its own before and after. */
  private applied(session: AgentSession, callId: string): { edit: AppliedEdit; path: string } | undefined {
    const change = session.changes.find((c) => c.callId === callId);
    const root = this.host.folder(session.folder)?.folder.uri.fsPath;
    const edit = change && root !== undefined ? this.host.edits.find(root, change.diff) : undefined;
    return edit && change ? { edit, path: change.path } : undefined;
  }

  /** An edit the agent applied, as a diff editor beside the session: its own before and after. Resolves with why not. */
  async openDiff(session: AgentSession, callId: string): Promise<string | undefined> {
    const found = this.applied(session, callId);
    if (!found) return t('This edit is not one this window applied (or the agent is off); its diff is on its card.');
    await this.diffs.applied(found.edit, found.path);
    return undefined;
  }

  /** A waiting edit, as a diff editor beside the session: the file as it is against what the edit would make. */
  async openProposed(session: AgentSession, callId: string): Promise<string | undefined> {
    const approval = session.gate.get(callId);
    const workspace = this.host.folder(session.folder);
    if (!approval || !workspace) return t('Already answered (on the phone, or the session was stopped).');
    return this.diffs.proposed(session.id, approval, workspace);
  }

  /** Allow or Deny from a proposed change's diff editor (its title bar). */
  decideProposed(uri: vscode.Uri | undefined, decision: Decision): boolean {
    const shown = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    const call = proposedCall(uri) ?? proposedCall(shown instanceof vscode.TabInputTextDiff ? shown.modified : undefined);
    const session = call && this.session(call.session);
    if (!call || !session) return false;
    const decided = this.decide(session, call.callId, decision);
    // The proposed change's editor is done with (never "the active editor": the webview may be it).
    const done = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && proposedCall(tab.input.modified)?.callId === call.callId && proposedCall(tab.input.modified)?.session === call.session);
    if (decided) void vscode.window.tabGroups.close(done);
    return decided;
  }

  /** Takes an applied edit back in the editor; every screen marks it reverted and the model is told. */
  async revert(session: AgentSession, callId: string): Promise<string | undefined> {
    const found = this.applied(session, callId);
    if (!found) return t('This edit is not one this window applied (or the agent is off); revert it by hand.');
    // The agent's write rules hold for its revert too: no link swapped in meanwhile is followed.
    try {
      await this.host.folder(session.folder)?.checkWrite(found.path);
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
    const problem = await this.host.edits.revert(found.edit);
    if (problem) return problem;
    session.reverted(callId);
    return undefined;
  }

  /** Undo in an editor took an agent edit back: the session whose change it was is told. */
  private undone(edit: AppliedEdit): void {
    for (const session of this.sessions()) {
      if (this.host.folder(session.folder)?.folder.uri.fsPath !== edit.root) continue;
      const change = session.changes.findLast((c) => c.diff === edit.diff && !c.reverted);
      if (change && session.reverted(change.callId)) return;
    }
  }

  /** A new session at the desk, the same the phone then sees: its id. */
  newSession(folder: string, prompt: string): string | undefined {
    const workspace = this.host.folder(folder);
    const session = workspace && this.host.store?.create(workspace);
    if (!session) return undefined;
    session.send(prompt);
    this.refresh();
    this.open(session.id);
    return session.id;
  }

  /** Stops and forgets a session (a row's Delete). */
  delete(id: string): boolean {
    this.panels.get(id)?.dispose();
    const gone = this.host.store?.delete(id) ?? false;
    this.refresh();
    return gone;
  }

  /** The open folders the agent may work in (their names). */
  folders(): string[] {
    return this.host.workspaces().map((w) => w.name);
  }
}

/** What a notification says an approval asks. */
function asks(a: PendingApproval): string {
  if (a.command !== undefined) return t('run {0}', a.command);
  if (a.diff !== undefined) return t('edit {0}', typeof a.input.path === 'string' ? a.input.path : '');
  return t('use the tool {0}', a.tool);
}
