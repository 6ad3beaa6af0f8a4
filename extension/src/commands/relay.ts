import * as vscode from 'vscode';
import { isLoopbackHost, isLoopbackUrl, LOOPBACK_WARNING, RelayStartError, tunnelSecretName } from '../../../server/src';
import type { OutputLog } from '../log';
import { PairingPanel } from '../pairingPanel';
import type { RemoteChat, Status } from '../remoteChat';
import { relaySettings, tunnelSettings } from '../settings';
import { COPY_PAIRING, message, offerStart, SET_TUNNEL_TOKEN, SHOW_LOG, SHOW_QR, START_TUNNEL } from './ui';

const t = vscode.l10n.t;

/** The relay's own commands: start, stop, pairing, the status bar's menu and settings changes. */
export class RelayCommands {
  /** The tunnel's commands act through these too. */
  constructor(
    readonly chat: RemoteChat,
    readonly log: OutputLog,
    readonly context: vscode.ExtensionContext,
  ) {}

  /** Start Remote Chat. Returns the status (no token); `error` when it could not start. */
  async start(): Promise<Status & { error?: string }> {
    const wasRunning = this.chat.status().running;
    let status: Status;
    try {
      status = await this.chat.start();
    } catch (err) {
      const text = message(err);
      this.log.error(`could not start: ${text}`);
      if (err instanceof RelayStartError && err.code === 'EADDRINUSE') {
        void vscode.window.showErrorMessage(t('DeskRelay: {0}', text), t('Change Port')).then((choice) => {
          if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', 'deskrelay.port');
        });
      } else {
        void vscode.window.showErrorMessage(t('DeskRelay could not start: {0}', text));
      }
      return { ...this.chat.status(), error: text };
    }
    if (wasRunning) {
      void vscode.window.showInformationMessage(t('DeskRelay is already running on {0}.', status.url ?? ''));
      return status;
    }
    this.warnIfPlaintextLan();
    void vscode.window
      .showInformationMessage(t('DeskRelay is running on {0}. Pair your phone:', status.url ?? ''), COPY_PAIRING(), SHOW_QR(), START_TUNNEL())
      .then((choice) => {
        if (choice === COPY_PAIRING()) void vscode.commands.executeCommand('deskrelay.copyPairing');
        else if (choice === SHOW_QR()) void vscode.commands.executeCommand('deskrelay.showPairing');
        else if (choice === START_TUNNEL()) void vscode.commands.executeCommand('deskrelay.startTunnel');
      });
    return status;
  }

  async stop(): Promise<Status> {
    const wasRunning = this.chat.status().running;
    await this.chat.stop();
    if (wasRunning) void vscode.window.showInformationMessage(t('DeskRelay stopped. The token is no longer valid.'));
    return this.chat.status();
  }

  /** Copy Pairing JSON: exactly `{"url":…,"token":…}` to the clipboard. Returns where it points, never the token. */
  async copyPairing(): Promise<{ url: string; viaTunnel: boolean } | undefined> {
    const pairing = this.chat.pairing();
    if (!pairing) {
      offerStart(t('DeskRelay is not running, so there is nothing to pair with.'));
      return undefined;
    }
    await vscode.env.clipboard.writeText(pairing.payload);
    if (pairing.viaTunnel) {
      void vscode.window.showInformationMessage(t('Pairing JSON (tunnel URL) copied. It is a secret: paste it only into your phone.'));
    } else if (isLoopbackUrl(pairing.url)) {
      void vscode.window.showWarningMessage(t('Pairing JSON copied. {0}', LOOPBACK_WARNING), START_TUNNEL()).then((choice) => {
        if (choice) void vscode.commands.executeCommand('deskrelay.startTunnel');
      });
    } else {
      void vscode.window.showWarningMessage(t('Pairing JSON copied. It is a secret, and this LAN address is plain HTTP: anyone on the network can read the token.'));
    }
    return { url: pairing.url, viaTunnel: pairing.viaTunnel };
  }

  showPairing(): void {
    if (!this.chat.status().running) offerStart(t('DeskRelay is not running yet.'));
    PairingPanel.show(this.context.extensionUri, this.chat);
  }

  showLog(): void {
    this.log.show();
  }

  /** The status bar's menu: the actions that apply now. */
  async showActions(): Promise<void> {
    const s = this.chat.status();
    const tunnelOn = s.tunnel === 'up' || s.tunnel === 'starting';
    const actions: { label: string; command: string; when: boolean }[] = [
      { label: `$(play) ${t('Start Remote Chat')}`, command: 'deskrelay.start', when: !s.running },
      { label: `$(copy) ${COPY_PAIRING()}`, command: 'deskrelay.copyPairing', when: s.running },
      { label: `$(device-mobile) ${SHOW_QR()}`, command: 'deskrelay.showPairing', when: s.running },
      { label: `$(globe) ${START_TUNNEL()}`, command: 'deskrelay.startTunnel', when: s.running && !tunnelOn },
      { label: `$(circle-slash) ${t('Stop Tunnel')}`, command: 'deskrelay.stopTunnel', when: s.tunnel !== 'stopped' },
      { label: `$(server) ${t('Select Provider')}`, command: 'deskrelay.selectProvider', when: true },
      { label: `$(key) ${t('Set Provider API Key')}`, command: 'deskrelay.setApiKey', when: true },
      { label: `$(key) ${SET_TUNNEL_TOKEN()}`, command: 'deskrelay.setTunnelToken', when: !!tunnelSecretName(tunnelSettings().kind) },
      { label: `$(refresh) ${t('Rotate Token')}`, command: 'deskrelay.rotateToken', when: s.running },
      { label: `$(device-mobile) ${t('Manage Devices')}`, command: 'deskrelay.manageDevices', when: s.running },
      { label: `$(debug-stop) ${t('Stop Remote Chat')}`, command: 'deskrelay.stop', when: s.running },
      { label: `$(output) ${SHOW_LOG()}`, command: 'deskrelay.showLog', when: true },
    ];
    const pick = await vscode.window.showQuickPick(
      actions.filter((a) => a.when),
      { title: s.running ? t('DeskRelay — running on {0}', `${s.url}${s.tunnelUrl ? ` · ${s.tunnelUrl}` : ''}`) : t('DeskRelay — stopped') },
    );
    if (pick) await vscode.commands.executeCommand(pick.command);
  }

  /** Settings changed: the port or address needs a restart; a LAN address gets its warning. */
  async settingsChanged(addressChanged: boolean): Promise<void> {
    if (!addressChanged) return;
    const { bindAddress, port } = relaySettings();
    this.log.info(`settings: bind address ${bindAddress}, port ${port}`);
    this.warnIfPlaintextLan();
    if (!this.chat.status().running) return;
    const choice = await vscode.window.showInformationMessage(
      t('DeskRelay: the port or bind address changed. Restart the relay to use it? The phone must pair again.'),
      t('Restart'),
    );
    if (choice === t('Restart')) {
      try {
        await this.chat.restart();
      } catch (err) {
        void vscode.window.showErrorMessage(t('DeskRelay could not restart: {0}', message(err)));
      }
    }
  }

  /** Once per non-loopback bind address: LAN traffic is plain HTTP. */
  private warnIfPlaintextLan(): void {
    const host = relaySettings().bindAddress;
    if (isLoopbackHost(host)) return;
    const key = 'deskrelay.lanWarningShownFor';
    this.log.warn(`bind address ${host} is reachable from the LAN over plain HTTP`);
    if (this.context.globalState.get<string>(key) === host) return;
    void this.context.globalState.update(key, host);
    void vscode.window.showWarningMessage(
      t('DeskRelay binds to {0}, reachable from the LAN over plain HTTP: anyone on the network can read the token and your chats. A tunnel (HTTPS) is the safe way to reach it.', host),
    );
  }
}
