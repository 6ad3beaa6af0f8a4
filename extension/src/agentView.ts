/**
 * The agent at the desk (issue 25): the DeskRelay activity-bar container's "Agent Sessions"
 * view, a webview per session with the same live transcript as the phone (approvals answerable
 * here too, the first answer winning; Stop; the next message), an applied edit opened as a diff
 * editor on request, and a status bar hint while an approval waits. Thin: it follows and answers
 * the door's own sessions in-process (server/src's SessionStore and AgentSession).
 */
import * as vscode from 'vscode';
import { NotPendingError, reverseDiff, type AgentEvent, type AgentSession, type AgentStatus } from '../../server/src';
import type { ExtensionAgentHost } from './agent';
import { Disposable } from './dispose';
import { askRendered, escapeHtml, webviewHtml } from './webview';

const t = vscode.l10n.t;
const BEFORE_SCHEME = 'deskrelay-agent-before';
const h = (message: string) => escapeHtml(t(message));

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

/** What the DeskRelay view, its webviews and its status bar hint share. */
export class AgentDesk extends Disposable implements vscode.TreeDataProvider<string> {
  private readonly changed = this.register(new vscode.EventEmitter<string | undefined>());
  readonly onDidChangeTreeData = this.changed.event;
  private readonly panels = new Map<string, AgentPanel>();
  private readonly hint = this.register(vscode.window.createStatusBarItem('deskrelay.agentWaiting', vscode.StatusBarAlignment.Right, 99));
  private readonly befores = new Map<string, string>();
  private signature = '';

  constructor(
    private readonly host: ExtensionAgentHost,
    private readonly extensionUri: vscode.Uri,
  ) {
    super();
    this.hint.name = t('DeskRelay Agent');
    this.register(vscode.window.registerTreeDataProvider('deskrelay.agentSessions', this));
    this.register(host.onAttach(() => this.refresh()));
    this.register(
      vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, { provideTextDocumentContent: (uri) => this.befores.get(uri.query) ?? '' }),
    );
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
    const items = this.items();
    const signature = JSON.stringify(items);
    if (signature === this.signature) return;
    this.signature = signature;
    this.changed.fire(undefined);
    const waiting = items.filter((i) => i.pending > 0);
    if (waiting.length) {
      this.hint.text = `$(bell-dot) ${t('Agent waits for you')}`;
      this.hint.tooltip = t('An edit or a command of the DeskRelay agent waits for your answer: {0}', waiting.map((w) => w.label).join(', '));
      this.hint.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      this.hint.command = { command: 'deskrelay.agent.open', title: t('Open'), arguments: [waiting[0]!.id] };
      this.hint.show();
    } else this.hint.hide();
  }

  getChildren(element?: string): string[] {
    return element ? [] : this.items().map((i) => i.id);
  }

  getTreeItem(id: string): vscode.TreeItem {
    const item = this.items().find((i) => i.id === id);
    const tree = new vscode.TreeItem(item?.label ?? id);
    tree.id = id;
    tree.description = item?.description;
    tree.iconPath = item ? STATUS_ICON[item.status] : undefined;
    tree.contextValue = 'agentSession';
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
    const panel = new AgentPanel(session, this.extensionUri, (callId) => this.openDiff(session, callId), () => this.panels.delete(id));
    this.panels.set(id, panel);
    return panel;
  }

  panel(id: string): AgentPanel | undefined {
    return this.panels.get(id);
  }

  /** An edit the agent made, as a diff editor: the text before (the diff taken back) and the file now. */
  async openDiff(session: AgentSession, callId: string): Promise<boolean> {
    const approval = session.log
      .since(0)
      .frames.map((f) => JSON.parse(f.framed.slice(f.framed.indexOf('data: ') + 6)) as AgentEvent)
      .find((e): e is Extract<AgentEvent, { type: 'approval' }> => e.type === 'approval' && e.callId === callId);
    if (!approval?.diff) return false;
    const path = /^\+\+\+ b\/(.+)$/m.exec(approval.diff)?.[1];
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.name === session.folder) ?? vscode.workspace.workspaceFolders?.[0];
    if (!path || !folder) return false;
    const file = vscode.Uri.joinPath(folder.uri, ...path.split('/'));
    const now = (await vscode.workspace.openTextDocument(file)).getText();
    const before = reverseDiff(approval.diff, now);
    if (before === undefined) {
      void vscode.window.showWarningMessage(t('{0} changed after the agent\u2019s edit; its diff cannot be shown against it.', path));
      return false;
    }
    const key = `${session.id}/${callId}`;
    this.befores.set(key, before);
    const left = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${path}`, query: key });
    await vscode.commands.executeCommand('vscode.diff', left, file, t('{0} (the agent\u2019s edit)', path));
    return true;
  }
}

type FromWebview =
  | { type: 'decide'; callId: string; decision: 'allow' | 'deny' | 'allow_session' }
  | { type: 'stop' }
  | { type: 'send'; text: string }
  | { type: 'diff'; callId: string }
  | { type: 'ready' }
  | { type: 'rendered'; html: string };

/** One session's webview: the transcript live from the session's own event log. */
export class AgentPanel {
  private readonly panel: vscode.WebviewPanel;
  private stopListening: () => void = () => {};
  private disposed = false;
  private readonly renderedHtml = new vscode.EventEmitter<string>();

  constructor(
    private readonly session: AgentSession,
    private readonly extensionUri: vscode.Uri,
    private readonly diff: (callId: string) => Promise<boolean>,
    private readonly onDispose: () => void,
  ) {
    this.panel = vscode.window.createWebviewPanel('deskrelay.agentSession', session.title || t('Agent session'), vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'media')],
    });
    this.panel.webview.html = this.html();
    this.panel.webview.onDidReceiveMessage((m: FromWebview) => void this.receive(m));
    this.panel.onDidDispose(() => this.dispose());
  }

  reveal(): void {
    this.panel.reveal();
  }

  /** What the webview's buttons do (also called by the tests, as the webview would). */
  async receive(m: FromWebview): Promise<string | undefined> {
    try {
      if (m.type === 'ready') this.follow();
      else if (m.type === 'decide') this.session.decide(m.callId, m.decision);
      else if (m.type === 'stop') this.session.stop();
      else if (m.type === 'send' && m.text.trim()) this.session.send(m.text.trim());
      else if (m.type === 'diff') await this.diff(m.callId);
      else if (m.type === 'rendered') this.renderedHtml.fire(m.html);
      return undefined;
    } catch (err) {
      // Answered on the phone first: the card shows that decision from the stream.
      const message = err instanceof NotPendingError ? t('Already answered (on the phone, or the session was stopped).') : err instanceof Error ? err.message : String(err);
      void this.panel.webview.postMessage({ type: 'notice', message });
      return message;
    }
  }

  /** Replays the session from its first event, then live (in the same tick: nothing between). */
  private follow(): void {
    this.stopListening();
    const send = (framed: string) => {
      const at = framed.indexOf('data: ');
      if (at >= 0) void this.panel.webview.postMessage({ type: 'event', event: JSON.parse(framed.slice(at + 6)) as AgentEvent });
    };
    void this.panel.webview.postMessage({ type: 'reset', folder: this.session.folder, title: this.session.title });
    for (const frame of this.session.log.since(0).frames) send(frame.framed);
    this.stopListening = this.session.log.listen({ push: (frame) => send(frame.framed), close: () => void this.panel.webview.postMessage({ type: 'notice', message: t('This session ended.') }) });
  }

  /** Tests only: the transcript as the webview shows it now (its HTML), asked of the webview itself. */
  rendered(): Promise<string> {
    return askRendered(this.panel.webview, this.renderedHtml.event);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.renderedHtml.dispose();
    this.stopListening();
    this.panel.dispose();
    this.onDispose();
  }

  private html(): string {
    const webview = this.panel.webview;
    const media = (name: string) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', name)).toString();
    const words = JSON.stringify({
      allow: t('Allow'),
      deny: t('Deny'),
      // What "allow for the session" grants, on its button (docs/agent.md).
      allowSessionCommand: t('Allow this exact command until a file changes'),
      allowSessionEdit: t('Allow every edit in this session'),
      allowSessionTool: t('Allow this tool for this session'),
      allowed: t('Allowed'),
      denied: t('Denied'),
      allowedSession: t('Allowed for this session'),
      edit: t('Make this edit?'),
      write: t('Write this file?'),
      run: t('Run this command?'),
      inFolder: t('in {0}', this.session.folder),
      openDiff: t('Open diff'),
      input: t('Input'),
      output: t('Output'),
      status: { running: t('Working…'), waiting: t('Waiting for you'), idle: t('Done: send more'), stopped: t('Stopped'), failed: t('Failed') },
    }).replace(/</g, '\\u003c');
    return webviewHtml({
      cspSource: webview.cspSource,
      language: vscode.env.language,
      title: t('Agent session'),
      stylesheets: [media('agent-session.css')],
      body: (nonce) => `<header><h1 id="title"></h1><p id="status" role="status"></p><button id="stop" type="button" class="danger">${h('Stop')}</button></header>
  <p id="notice" role="alert" hidden></p>
  <ol id="log" aria-label="${h('Agent session')}"></ol>
  <form id="compose"><label for="message" class="visually-hidden">${h('Message to the agent')}</label><textarea id="message" rows="2" placeholder="${h('Message the agent')}"></textarea><button type="submit">${h('Send')}</button></form>
  <script nonce="${nonce}" id="words" type="application/json">${words}</script>
  <script nonce="${nonce}" src="${media('markdown.js')}"></script>
  <script nonce="${nonce}" src="${media('agent-session.js')}"></script>`,
    });
  }
}
