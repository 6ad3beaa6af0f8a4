import * as vscode from 'vscode';
import { isLoopbackUrl, LOOPBACK_WARNING } from '../../server/src';
import { Disposable } from './dispose';
import type { RemoteChat } from './remoteChat';
import { phoneMaySwitch, SECTION } from './settings';
import { escapeHtml, webviewHtml } from './webview';

/** What the webview script renders (media/pairing.js). */
export interface PanelState {
  running: boolean;
  url?: string;
  viaTunnel: boolean;
  tunnel: string;
  /** The tunnel's address lasts across restarts (named tunnel, Funnel/Serve, ngrok): the QR keeps its URL. */
  lastingUrl: boolean;
  /** The pairing payload: shown only after the user reveals it. */
  payload?: string;
  /** The payload as a QR code (SVG data URL), made here in the extension host. */
  qr?: string;
  /** The phone web client link (`<url>/#token=…`) and its QR code. */
  link?: string;
  linkQr?: string;
  /** `deskrelay.allowPhoneProviderSwitch`: the phone may choose the provider and model. */
  phoneSwitch: boolean;
  /** Paired devices (issue 26), already worded: the name and "connected" or when last seen. */
  devices: { name: string; status: string; connected: boolean }[];
  warnings: string[];
}

const t = vscode.l10n.t;
const SECRET_WARNING = () =>
  t('The pairing payload and the link hold the token: whoever has them can chat through your providers and spend their quota. Show them only to your own phone.');
const LAN_WARNING = () => t('This is a direct LAN address over plain HTTP: anyone on the network can read the token and your chats. Prefer the tunnel.');

async function qrDataUrl(text: string): Promise<string> {
  // Loaded on the first QR code drawn (dist/qrcode.js beside the bundle), not at activation.
  const QRCode = await import('qrcode');
  const svg = await QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
}

/** The "Show Pairing QR Code" webview: one panel, updated as the relay and tunnel change. */
export class PairingPanel extends Disposable {
  static readonly viewType = 'deskrelay.pairing';
  private static current: PairingPanel | undefined;

  static show(extensionUri: vscode.Uri, chat: RemoteChat): PairingPanel {
    if (PairingPanel.current) {
      PairingPanel.current.panel.reveal(undefined, false);
      void PairingPanel.current.update();
      return PairingPanel.current;
    }
    const panel = vscode.window.createWebviewPanel(PairingPanel.viewType, t('DeskRelay Pairing'), vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'media')],
      retainContextWhenHidden: false,
    });
    PairingPanel.current = new PairingPanel(panel, extensionUri, chat);
    return PairingPanel.current;
  }

  static get visible(): PairingPanel | undefined {
    return PairingPanel.current;
  }

  private constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private readonly chat: RemoteChat,
  ) {
    super();
    this.register(panel);
    this.register(panel.onDidDispose(() => this.dispose()));
    this.register(chat.onDidChange(() => void this.update()));
    this.register(
      panel.webview.onDidReceiveMessage((m: { type?: string }) => {
        if (m?.type === 'ready') void this.update();
        else if (m?.type === 'copy') void vscode.commands.executeCommand('deskrelay.copyPairing');
        else if (m?.type === 'startTunnel') void vscode.commands.executeCommand('deskrelay.startTunnel');
        else if (m?.type === 'start') void vscode.commands.executeCommand('deskrelay.start');
        else if (m?.type === 'phoneSwitch') void setPhoneSwitch((m as { on?: unknown }).on === true);
        else if (m?.type === 'manageDevices') void vscode.commands.executeCommand('deskrelay.manageDevices');
      }),
    );
    this.register(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${SECTION}.allowPhoneProviderSwitch`)) void this.update();
      }),
    );
    panel.webview.html = this.html();
  }

  override dispose(): void {
    if (PairingPanel.current === this) PairingPanel.current = undefined;
    super.dispose();
  }

  async state(): Promise<PanelState> {
    const s = this.chat.status();
    const p = this.chat.pairing();
    const warnings = [SECRET_WARNING()];
    if (p && !p.viaTunnel) warnings.push(isLoopbackUrl(p.url) ? LOOPBACK_WARNING : LAN_WARNING());
    const lasting = s.lastingUrl === true;
    if (s.tunnel === 'down') {
      warnings.push(
        lasting
          ? t('The tunnel is down. Restart it: its address stays the same, so the phone keeps its pairing.')
          : t('The tunnel is down. Restart it: a restarted quick tunnel has a new URL, so pair again.'),
      );
    }
    return {
      running: s.running,
      url: p?.url,
      viaTunnel: p?.viaTunnel ?? false,
      tunnel: s.tunnelUrl
        ? lasting
          ? t('up at {0}. This address lasts: after a restart the QR code carries the same URL and the phone only needs the new token.', s.tunnelUrl)
          : t('up at {0}', s.tunnelUrl)
        : s.tunnel,
      lastingUrl: lasting && !!s.tunnelUrl,
      payload: p?.payload,
      qr: p ? await qrDataUrl(p.payload) : undefined,
      link: p?.link,
      linkQr: p ? await qrDataUrl(p.link) : undefined,
      phoneSwitch: phoneMaySwitch(),
      devices: this.chat.devices().map((d) => ({
        name: d.name,
        connected: d.connected,
        status: d.connected ? t('connected') : t('last seen {0}', new Date(d.lastSeen).toLocaleString(vscode.env.language)),
      })),
      warnings,
    };
  }

  async update(): Promise<void> {
    if (this.isDisposed) return;
    const state = await this.state();
    if (!this.isDisposed) await this.panel.webview.postMessage({ type: 'state', state });
  }

  private html(): string {
    const webview = this.panel.webview;
    const media = (name: string) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', name)).toString();
    const h = (message: string) => escapeHtml(t(message));
    return webviewHtml({
      cspSource: webview.cspSource,
      language: vscode.env.language,
      title: t('DeskRelay Pairing'),
      stylesheets: [media('pairing.css')],
      images: true,
      body: (nonce) => `<main>
    <h1>${h('Pair your phone with DeskRelay')}</h1>
    <section id="stopped" hidden>
      <p>${h('DeskRelay is not running.')}</p>
      <button id="start" type="button">${h('Start Remote Chat')}</button>
    </section>
    <section id="running" hidden>
      <div class="qrs">
        <figure>
          <div class="qr-wrap"><img id="qr" alt="${h('QR code of the pairing JSON')}"></div>
          <figcaption>${h('Phone app: scan to pair')}</figcaption>
        </figure>
        <figure>
          <div class="qr-wrap"><img id="link-qr" alt="${h('QR code of the web client link')}"></div>
          <figcaption>${h('Phone browser: scan to open the DeskRelay web client')}</figcaption>
        </figure>
      </div>
      <dl>
        <dt>${h('URL')}</dt><dd><code id="url"></code></dd>
        <dt>${h('Tunnel')}</dt><dd id="tunnel"></dd>
      </dl>
      <div class="actions">
        <button id="reveal" type="button" class="secondary" data-reveal="${h('Reveal pairing JSON and link')}" data-hide="${h('Hide pairing JSON and link')}">${h('Reveal pairing JSON and link')}</button>
        <button id="copy" type="button">${h('Copy pairing JSON')}</button>
        <button id="start-tunnel" type="button" class="secondary" hidden>${h('Start Tunnel')}</button>
      </div>
      <label class="switch"><input id="phone-switch" type="checkbox"> ${h('Let the phone choose the provider and model')}</label>
      <p class="hint">${h('The phone lists the providers set up here and can make another one (and its model) active for every next message, as Select Provider does.')}</p>
      <pre id="payload" hidden></pre>
      <pre id="link" hidden></pre>
      <h2>${h('Paired devices')}</h2>
      <p id="no-devices" class="hint">${h('None yet: the phone web client registers itself as a device when it pairs.')}</p>
      <ul id="devices" class="devices"></ul>
      <button id="manage-devices" type="button" class="secondary">${h('Manage Devices')}</button>
    </section>
    <ul id="warnings" class="warnings"></ul>
  </main>
  <script nonce="${nonce}" src="${media('pairing.js')}"></script>`,
    });
  }
}

/** The setting is machine-scoped: written to the user's settings, never a workspace's. */
function setPhoneSwitch(on: boolean): Thenable<void> {
  return vscode.workspace.getConfiguration(SECTION).update('allowPhoneProviderSwitch', on, vscode.ConfigurationTarget.Global);
}
