import * as vscode from 'vscode';
import { Disposable } from './dispose';
import type { RemoteChat } from './remoteChat';
import { askRendered, webviewHtml } from './webview';

/** One row of the list: `/v1/conversations`' summary (docs/conversations.md). */
interface Summary {
  id: string;
  title: string;
  updatedAt: string;
  kind: 'chat' | 'agent';
  preview: string;
}

interface Conversation {
  id: string;
  title: string;
  status: string;
  messages: { role: string; content: string | { type: string; text?: string }[]; pending?: boolean; error?: string }[];
  lastEventId: number;
}

const textOf = (content: Conversation['messages'][number]['content']) =>
  typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? (p.text ?? '') : '[photo]')).join(' ');

/**
 * The desk's side of conversations kept on the desktop (issue 30): the "DeskRelay Chats" view
 * lists them (agent sessions too), opening one shows it live in a webview where the user can go
 * on at the desk, and Export opens one as Markdown. It talks to this window's own relay over
 * loopback, through the same door and chat service as a phone, so everything stays in step.
 */
export class ChatsView extends Disposable implements vscode.TreeDataProvider<Summary> {
  private readonly changed = this.register(new vscode.EventEmitter<void>());
  readonly onDidChangeTreeData = this.changed.event;
  private readonly tree: vscode.TreeView<Summary>;
  private feed: AbortController | undefined;
  private readonly panels = new Map<string, ChatPanel>();

  constructor(
    private readonly remote: RemoteChat,
    readonly extensionUri: vscode.Uri,
  ) {
    super();
    this.tree = this.register(vscode.window.createTreeView('deskrelay.chats', { treeDataProvider: this }));
    this.register(remote.onDidChange(() => this.follow()));
    this.register({ dispose: () => this.feed?.abort() });
    this.follow();
  }

  /** Loopback call to this window's relay; undefined while it is stopped. */
  async call(method: string, path: string, body?: unknown): Promise<Response | undefined> {
    const local = this.remote.loopback();
    if (!local) return undefined;
    return fetch(`${local.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${local.token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  /** A conversation's events after `lastEventId`, as a stream (POST: the same stream as GET). */
  async callStream(path: string, lastEventId: number, signal: AbortSignal): Promise<Response | undefined> {
    const local = this.remote.loopback();
    if (!local) return undefined;
    return fetch(`${local.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${local.token}`, 'Last-Event-ID': String(lastEventId) }, signal });
  }

  refresh(): void {
    this.changed.fire();
  }

  getTreeItem(s: Summary): vscode.TreeItem {
    const item = new vscode.TreeItem(s.title || (s.kind === 'agent' ? vscode.l10n.t('Agent session') : vscode.l10n.t('New chat')));
    item.id = s.id;
    item.description = s.kind === 'agent' ? 'agent' : new Date(s.updatedAt).toLocaleString();
    item.tooltip = s.preview;
    item.iconPath = new vscode.ThemeIcon(s.kind === 'agent' ? 'tools' : 'comment-discussion');
    item.contextValue = s.kind === 'agent' ? 'deskrelay.agentSession' : 'deskrelay.conversation';
    // An agent session opens in the agent session webview (agentView.ts), as from the DeskRelay view.
    item.command = s.kind === 'chat'
      ? { command: 'deskrelay.openConversation', title: vscode.l10n.t('Open'), arguments: [s.id] }
      : { command: 'deskrelay.agent.open', title: vscode.l10n.t('Open'), arguments: [s.id] };
    return item;
  }

  async getChildren(): Promise<Summary[]> {
    let res: Response | undefined;
    try {
      res = await this.call('GET', '/v1/conversations');
    } catch {
      res = undefined;
    }
    if (!res) {
      this.tree.message = vscode.l10n.t('Start the relay (DeskRelay: Start) to see its chats.');
      return [];
    }
    if (!res.ok) {
      const body = (await res.json().catch(() => undefined)) as { error?: { message?: string } } | undefined;
      this.tree.message = body?.error?.message ?? vscode.l10n.t('The relay answered {0}.', res.status);
      return [];
    }
    const list = ((await res.json()) as { conversations: Summary[] }).conversations;
    this.tree.message = list.length ? undefined : vscode.l10n.t('No chats yet: start one from the phone, or here with DeskRelay: New Chat.');
    return list;
  }

  /** Follows the change feed while the relay runs, refreshing the list and open panels on every change. */
  private follow(): void {
    const local = this.remote.loopback();
    const key = local ? `${local.url} ${local.token}` : '';
    if (this.feed && (this.feed as AbortController & { key?: string }).key === key) return;
    this.feed?.abort();
    this.feed = undefined;
    this.refresh();
    if (!local) return;
    const feed = Object.assign(new AbortController(), { key });
    this.feed = feed;
    void (async () => {
      while (!feed.signal.aborted) {
        try {
          const res = await fetch(`${local.url}/v1/conversations/events`, { method: 'POST', headers: { Authorization: `Bearer ${local.token}` }, signal: feed.signal });
          if (!res.ok || !res.body) return;
          for await (const chunk of res.body) {
            if (String(Buffer.from(chunk as Uint8Array)).includes('data:')) {
              this.refresh();
              for (const panel of this.panels.values()) void panel.reload();
            }
          }
        } catch {
          /* the relay stopped or the stream dropped */
        }
        await new Promise((r) => setTimeout(r, 2000));
      }
    })();
  }

  async newChat(): Promise<void> {
    const res = await this.call('POST', '/v1/conversations', {});
    if (!res?.ok) return void vscode.window.showErrorMessage(await failure(res));
    const { id } = (await res.json()) as { id: string };
    await this.open(id);
  }

  /** Opens a conversation's panel; resolves with its title once shown (undefined when none was chosen or it is gone). */
  async open(id?: string): Promise<string | undefined> {
    id ??= await this.pick(vscode.l10n.t('Open which chat?'));
    if (!id) return undefined;
    let panel = this.panels.get(id);
    if (panel) panel.reveal();
    else {
      const made = new ChatPanel(this, id, () => this.panels.delete(id));
      this.panels.set(id, made);
      panel = made;
    }
    return panel.reload();
  }

  /** Tests only: the open chat panel's messages as its webview shows them (HTML). */
  rendered(id: string): Promise<string> | undefined {
    return this.panels.get(id)?.rendered();
  }

  async export(id?: string | Summary): Promise<void> {
    const chosen = typeof id === 'object' ? id.id : (id ?? (await this.pick(vscode.l10n.t('Export which chat as Markdown?'))));
    if (!chosen) return;
    const res = await this.call('GET', `/v1/conversations/${encodeURIComponent(chosen)}/export`);
    if (!res?.ok) return void vscode.window.showErrorMessage(await failure(res));
    const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: await res.text() });
    await vscode.window.showTextDocument(doc);
  }

  private async pick(placeHolder: string): Promise<string | undefined> {
    const list = (await this.getChildren()).filter((s) => s.kind === 'chat');
    if (list.length === 0) {
      void vscode.window.showInformationMessage(this.tree.message ?? vscode.l10n.t('No chats yet.'));
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      list.map((s) => ({ label: s.title || vscode.l10n.t('New chat'), description: s.preview, id: s.id })),
      { placeHolder },
    );
    return picked?.id;
  }
}

async function failure(res: Response | undefined): Promise<string> {
  if (!res) return vscode.l10n.t('The relay is not running: start it first (DeskRelay: Start).');
  const body = (await res.json().catch(() => undefined)) as { error?: { message?: string } } | undefined;
  return body?.error?.message ?? vscode.l10n.t('The relay answered {0}.', res.status);
}

/** One conversation in a webview: its messages, the reply in progress live, and a box to go on at the desk. */
class ChatPanel {
  private readonly panel: vscode.WebviewPanel;
  private events: AbortController | undefined;
  private readonly renderedHtml = new vscode.EventEmitter<string>();

  constructor(
    private readonly view: ChatsView,
    private readonly id: string,
    onClose: () => void,
  ) {
    const media = vscode.Uri.joinPath(view.extensionUri, 'media');
    this.panel = vscode.window.createWebviewPanel('deskrelay.chat', vscode.l10n.t('DeskRelay chat'), vscode.ViewColumn.Active, { enableScripts: true, localResourceRoots: [media] });
    this.panel.webview.html = page(this.panel.webview.cspSource, this.panel.webview.asWebviewUri(vscode.Uri.joinPath(media, 'markdown.js')).toString());
    this.panel.onDidDispose(() => {
      this.events?.abort();
      this.renderedHtml.dispose();
      onClose();
    });
    this.panel.webview.onDidReceiveMessage(async (m: { type: string; text?: string; html?: string }) => {
      if (m.type === 'rendered') this.renderedHtml.fire(m.html ?? '');
      else if (m.type === 'send' && m.text?.trim()) {
        const res = await view.call('POST', `/v1/conversations/${this.id}/messages`, { content: m.text });
        if (!res || res.status !== 202) void vscode.window.showErrorMessage(await failure(res));
      } else if (m.type === 'stop') {
        await view.call('POST', `/v1/conversations/${this.id}/stop`);
      }
    });
  }

  reveal(): void {
    this.panel.reveal();
  }

  rendered(): Promise<string> {
    return askRendered(this.panel.webview, this.renderedHtml.event);
  }

  /** Shows the conversation as the desktop has it, then follows its events from there; its title. */
  async reload(): Promise<string | undefined> {
    const res = await this.view.call('GET', `/v1/conversations/${this.id}`).catch(() => undefined);
    if (!res?.ok) {
      if (res?.status === 404) this.panel.dispose();
      return undefined;
    }
    const c = (await res.json()) as Conversation;
    this.panel.title = c.title || vscode.l10n.t('New chat');
    void this.panel.webview.postMessage({
      type: 'show',
      running: c.status === 'running',
      messages: c.messages.map((m) => ({ role: m.role, text: textOf(m.content), error: m.error, pending: m.pending === true })),
    });
    this.followFrom(c.lastEventId);
    return this.panel.title;
  }

  private followFrom(lastEventId: number): void {
    this.events?.abort();
    const events = new AbortController();
    this.events = events;
    void this.stream(events, lastEventId);
  }

  private async stream(events: AbortController, lastEventId: number): Promise<void> {
    const res = await this.view.callStream(`/v1/conversations/${this.id}/events`, lastEventId, events.signal).catch(() => undefined);
    if (!res?.ok || !res.body) return;
    let buffer = '';
    try {
      for await (const chunk of res.body) {
        buffer += String(Buffer.from(chunk as Uint8Array));
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').find((l) => l.startsWith('data:'));
          if (data) void this.panel.webview.postMessage({ type: 'event', event: JSON.parse(data.slice(5)) });
        }
      }
    } catch {
      /* closed or aborted */
    }
  }
}

/**
 * The webview: plain DOM, no remote content; CSP allows only its own inline script and the phone's
 * Markdown renderer (media/markdown.js). A reply is sanitised Markdown, as on the phone; the
 * user's words and errors are text (textContent).
 */
function page(cspSource: string, markdownJs: string): string {
  return webviewHtml({
    cspSource,
    language: vscode.env.language,
    title: vscode.l10n.t('DeskRelay chat'),
    inlineCss: `body{font-family:var(--vscode-font-family);color:var(--vscode-foreground);padding:0 12px}
.msg{white-space:pre-wrap;margin:10px 0;padding:8px 10px;border-radius:6px}
.msg.assistant{white-space:normal;overflow-wrap:anywhere}
.msg.assistant>:first-child{margin-top:0}.msg.assistant>:last-child{margin-bottom:0}
.msg.assistant pre{white-space:pre-wrap;background:var(--vscode-textCodeBlock-background);padding:6px 8px;border-radius:4px}
.msg.assistant code{font-family:var(--vscode-editor-font-family)}
.msg.assistant a{color:var(--vscode-textLink-foreground)}
.user{background:var(--vscode-input-background)}
.error{color:var(--vscode-errorForeground)}
form{display:flex;gap:6px;position:sticky;bottom:0;padding:8px 0;background:var(--vscode-editor-background)}
textarea{flex:1;font:inherit;color:var(--vscode-input-foreground);background:var(--vscode-input-background);border:1px solid var(--vscode-input-border,transparent)}`,
    body: (nonce) => `<div id="log" role="log" aria-live="polite"></div>
<form id="form"><textarea id="text" rows="2" aria-label="Message"></textarea><button id="send" type="submit">Send</button><button id="stop" type="button" hidden>Stop</button></form>
<script nonce="${nonce}" src="${markdownJs}"></script>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
const log = document.getElementById('log');
let live = null;
/** The reply's words so far (the whole text is rendered again as each piece arrives). */
const raw = new WeakMap();
function show(div, text) {
  raw.set(div, text);
  if (div.classList.contains('assistant') && !div.classList.contains('error')) div.innerHTML = window.deskrelayMarkdown.renderMarkdown(text);
  else div.textContent = text;
}
function add(role, text, error) {
  const div = document.createElement('div');
  div.className = 'msg ' + role;
  show(div, text);
  if (error) { const e = document.createElement('div'); e.className = 'error'; e.textContent = error; div.append(e); }
  log.append(div);
  return div;
}
function running(on) { document.getElementById('stop').hidden = !on; document.getElementById('send').disabled = on; }
window.addEventListener('message', (e) => {
  const m = e.data;
  if (m.type === 'show') {
    log.replaceChildren();
    live = null;
    for (const x of m.messages) { const d = add(x.role, x.text, x.error); if (x.pending) live = d; }
    if (m.running) live = log.lastElementChild;
    running(m.running);
  } else if (m.type === 'probe') {
    // The tests read what the webview shows (the extension host cannot reach its DOM).
    vscode.postMessage({ type: 'rendered', html: log.innerHTML });
    return;
  } else if (m.type === 'event') {
    const ev = m.event;
    if (ev.type === 'user') { add('user', ev.text); live = null; }
    else if (ev.type === 'status') { running(ev.status === 'running'); if (ev.status === 'running') live = add('assistant', ''); else live = null; }
    else if (ev.type === 'text') { if (!live) live = add('assistant', ''); show(live, (raw.get(live) || '') + ev.delta); }
    else if (ev.type === 'error') add('assistant error', ev.message);
  }
  window.scrollTo(0, document.body.scrollHeight);
});
document.getElementById('form').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = document.getElementById('text');
  vscode.postMessage({ type: 'send', text: t.value });
  t.value = '';
});
document.getElementById('stop').addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
</script>`,
  });
}
