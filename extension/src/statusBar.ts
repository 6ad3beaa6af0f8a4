import * as vscode from 'vscode';
import { Disposable } from './dispose';
import type { RemoteChat, Status } from './remoteChat';
import { SECTION } from './settings';

const t = vscode.l10n.t;

/** Stopped / running on :port / tunnel URL, plus the active provider; a click opens the actions. */
export class StatusBar extends Disposable {
  private readonly item = this.register(vscode.window.createStatusBarItem('deskrelay.status', vscode.StatusBarAlignment.Right, 100));

  constructor(private readonly chat: RemoteChat) {
    super();
    this.item.name = 'DeskRelay';
    this.item.command = 'deskrelay.showActions';
    this.register(chat.onDidChange(() => this.update()));
    // "Connected" fades with time (a device quiet for two minutes), so the count is looked at again now and then.
    const timer = setInterval(() => this.update(), 30_000);
    this.register({ dispose: () => clearInterval(timer) });
    this.register(vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration(SECTION) && this.update()));
    this.update();
    this.item.show();
  }

  update(): void {
    const s = this.chat.status();
    this.item.text = text(s);
    this.item.tooltip = tooltip(s);
    this.item.backgroundColor = s.running && !s.providerReady ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }
}

function host(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function text(s: Status): string {
  const devices = s.running && s.connectedDevices > 0 ? ` · $(device-mobile) ${s.connectedDevices}` : '';
  const provider = ` · ${s.activeProvider || t('no provider')}${devices}`;
  if (!s.running) return `$(debug-disconnect) ${t('DeskRelay: stopped')}${provider}`;
  if (s.tunnelUrl) return `$(globe) DeskRelay: ${host(s.tunnelUrl)}${provider}`;
  const tunnel = s.tunnel === 'starting' ? ' $(sync~spin)' : s.tunnel === 'down' ? ' $(warning)' : '';
  return `$(radio-tower) ${t('DeskRelay: running on :{0}', String(s.port))}${tunnel}${provider}`;
}

function tooltip(s: Status): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**DeskRelay** — ${s.running ? t('running on {0}', `\`${s.url}\``) : t('stopped')}\n\n`);
  if (s.running) md.appendMarkdown(`${t('Tunnel: {0}', s.tunnelUrl ? `\`${s.tunnelUrl}\`` : s.tunnel)}\n\n`);
  const provider = t('Provider: {0}', `\`${s.activeProvider || t('(none)')}\``);
  md.appendMarkdown(`${provider}${s.providerReady ? '' : ` — ${t('not usable (missing, invalid or the cloud provider)')}`}\n\n`);
  if (s.running) md.appendMarkdown(`${t('Devices: {0} paired, {1} connected', String(s.devices), String(s.connectedDevices))}\n\n`);
  md.appendMarkdown(t('Click for DeskRelay actions.'));
  return md;
}
