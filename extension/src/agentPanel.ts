import * as vscode from 'vscode';
import { NotPendingError, type AgentEvent, type AgentSession, type Decision } from '../../server/src';
import { askRendered, escapeHtml, webviewHtml } from './webview';

const t = vscode.l10n.t;
const h = (message: string) => escapeHtml(t(message));

/** What a session's webview asks of the desk (each resolves with why not, or undefined). */
export interface PanelActions {
  diff(callId: string): Promise<string | undefined>;
  proposed(callId: string): Promise<string | undefined>;
  revert(callId: string): Promise<string | undefined>;
  /** Why the session ended, for the banner that stays. */
  endedWhy(): string;
  /** The note a "Deny and say why" asks for (undefined: cancelled). */
  askNote(): Thenable<string | undefined>;
}

export type FromWebview =
  | { type: 'decide'; callId: string; decision: Decision; note?: string }
  | { type: 'denyNote'; callId: string }
  | { type: 'stop' }
  | { type: 'send'; text: string }
  | { type: 'diff'; callId: string }
  | { type: 'proposed'; callId: string }
  | { type: 'revert'; callId: string }
  | { type: 'ready' }
  | { type: 'rendered'; html: string };

/**
 * One session's webview: the transcript live from the session's own event log. It keeps its
 * page while hidden (expanded cards, scroll, a half-typed message).
 */
export class AgentPanel {
  private readonly panel: vscode.WebviewPanel;
  private stopListening: () => void = () => {};
  private disposed = false;
  private readonly renderedHtml = new vscode.EventEmitter<string>();
  /** Times the page loaded (tests: a hidden and shown panel keeps its page, so this stays 1). */
  loads = 0;

  constructor(
    readonly session: AgentSession,
    private readonly extensionUri: vscode.Uri,
    private readonly actions: PanelActions,
    private readonly onDispose: () => void,
  ) {
    this.panel = vscode.window.createWebviewPanel('deskrelay.agentSession', session.title || t('Agent session'), vscode.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'media')],
    });
    this.panel.webview.html = this.html();
    this.panel.webview.onDidReceiveMessage((m: FromWebview) => void this.receive(m));
    this.panel.onDidDispose(() => this.dispose());
  }

  reveal(): void {
    this.panel.reveal();
  }

  get visible(): boolean {
    return !this.disposed && this.panel.visible;
  }

  get active(): boolean {
    return !this.disposed && this.panel.active;
  }

  /** What the webview's buttons do (also called by the tests, as the webview would). */
  async receive(m: FromWebview): Promise<string | undefined> {
    try {
      let problem: string | undefined;
      if (m.type === 'ready') this.follow();
      else if (m.type === 'decide') this.session.decide(m.callId, m.decision, m.note);
      else if (m.type === 'denyNote') {
        const note = await this.actions.askNote();
        if (note !== undefined) this.session.decide(m.callId, 'deny', note);
      } else if (m.type === 'stop') this.session.stop();
      else if (m.type === 'send' && m.text.trim()) this.session.send(m.text.trim());
      else if (m.type === 'diff') problem = await this.actions.diff(m.callId);
      else if (m.type === 'proposed') problem = await this.actions.proposed(m.callId);
      else if (m.type === 'revert') problem = await this.actions.revert(m.callId);
      else if (m.type === 'rendered') this.renderedHtml.fire(m.html);
      if (problem) void this.panel.webview.postMessage({ type: 'notice', message: problem });
      return problem;
    } catch (err) {
      // Answered on the phone first: the card shows that decision from the stream.
      const message = err instanceof NotPendingError ? t('Already answered (on the phone, or the session was stopped).') : err instanceof Error ? err.message : String(err);
      void this.panel.webview.postMessage({ type: 'notice', message });
      return message;
    }
  }

  /** Replays the session from its first event, then live (in the same tick: nothing between). */
  private follow(): void {
    this.loads++;
    this.stopListening();
    const send = (framed: string) => {
      const at = framed.indexOf('data: ');
      if (at >= 0) void this.panel.webview.postMessage({ type: 'event', event: JSON.parse(framed.slice(at + 6)) as AgentEvent });
    };
    void this.panel.webview.postMessage({ type: 'reset', folder: this.session.folder, title: this.session.title });
    for (const frame of this.session.log.since(0).frames) send(frame.framed);
    this.stopListening = this.session.log.listen({
      push: (frame) => send(frame.framed),
      // A banner that stays (not a passing notice): the session is gone and why.
      close: () => void this.panel.webview.postMessage({ type: 'ended', message: this.actions.endedWhy() }),
    });
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
      denyNote: t('Deny and say why…'),
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
      edited: t('Edited (allowed for this session)'),
      inFolder: t('in {0}', this.session.folder),
      openDiff: t('Open diff'),
      openProposed: t('Open in diff editor'),
      revert: t('Revert'),
      reverted: t('Reverted'),
      revertedLine: t('Reverted: {0}'),
      stoppedLine: t('Stopped by the user.'),
      queued: t('Queued: sent when the model next stops'),
      changes: t('Changes'),
      noteSaid: t('Your note: {0}'),
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
  <p id="ended" role="alert" hidden></p>
  <p id="notice" role="alert" hidden></p>
  <details id="changes" hidden><summary></summary><ol></ol></details>
  <ol id="log" aria-label="${h('Agent session')}"></ol>
  <form id="compose"><label for="message" class="visually-hidden">${h('Message to the agent')}</label><textarea id="message" rows="2" placeholder="${h('Message the agent (Enter sends, Shift+Enter for a new line)')}"></textarea><button type="submit">${h('Send')}</button></form>
  <script nonce="${nonce}" id="words" type="application/json">${words}</script>
  <script nonce="${nonce}" src="${media('markdown.js')}"></script>
  <script nonce="${nonce}" src="${media('agent-session.js')}"></script>`,
    });
  }
}
