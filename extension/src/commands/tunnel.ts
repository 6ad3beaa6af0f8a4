import * as vscode from 'vscode';
import { tunnelKindInfo, tunnelSecretName, TUNNEL_KINDS, type TunnelKind } from '../../../server/src';
import { TunnelAgentNotFound } from '../remoteChat';
import type { TunnelSecrets } from '../secrets';
import { tunnelSettings } from '../settings';
import { offerAgentInstall } from './agentInstall';
import type { RelayCommands } from './relay';
import { COPY_PAIRING, firstLine, message, RESTART_TUNNEL, SET_TUNNEL_TOKEN, SHOW_LOG, SHOW_QR } from './ui';

const t = vscode.l10n.t;

/** The tunnel's commands: start (the relay first when needed), stop, its token, and its going down. */
export class TunnelCommands {
  constructor(
    private readonly relay: RelayCommands,
    private readonly tunnelSecrets: TunnelSecrets,
  ) {}

  /** Start Tunnel (starting the relay first when needed). Resolves with the tunnel URL, or undefined. */
  async startTunnel(): Promise<string | undefined> {
    if (!this.relay.chat.status().running) {
      const started = await this.relay.start();
      if (!started.running) return undefined;
    }
    let agent;
    try {
      agent = this.relay.chat.findTunnelAgent();
    } catch (err) {
      if (err instanceof TunnelAgentNotFound) return this.offerAgentInstall(err);
      throw err;
    }
    const kind = this.relay.chat.tunnelKind();
    const needs = tunnelKindInfo(kind);
    if (needs.needsHostname && !tunnelSettings().hostname) {
      void vscode.window
        .showErrorMessage(t('DeskRelay: the named Cloudflare tunnel needs its public hostname (deskrelay.tunnel.hostname).'), t('Open Settings'))
        .then((choice) => choice && void vscode.commands.executeCommand('workbench.action.openSettings', 'deskrelay.tunnel.hostname'));
      return undefined;
    }
    if (needs.secret?.required && !(await this.tunnelSecrets.get(kind))) {
      void vscode.window
        .showErrorMessage(t('DeskRelay: the named Cloudflare tunnel needs its tunnel token from the Cloudflare dashboard.'), SET_TUNNEL_TOKEN())
        .then((choice) => choice && void vscode.commands.executeCommand('deskrelay.setTunnelToken', kind));
      return undefined;
    }
    this.relay.log.info(`starting ${agent.title} (${agent.path})`);
    let cancelled = false;
    try {
      const url = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: t('DeskRelay tunnel'), cancellable: true },
        (progress, cancel) => {
          const sub = this.relay.chat.onTunnelProgress((m) => progress.report({ message: m }));
          const stop = cancel.onCancellationRequested(() => {
            cancelled = true;
            void this.relay.chat.stopTunnel();
          });
          progress.report({ message: t('Starting {0}…', agent.program) });
          return this.relay.chat.startTunnel().finally(() => {
            sub.dispose();
            stop.dispose();
          });
        },
      );
      const lasting = this.relay.chat.status().lastingUrl;
      void vscode.window
        .showInformationMessage(
          lasting
            ? t('DeskRelay tunnel is up at {0}. This address lasts: a phone paired with it only needs the new token after a restart.', url)
            : t('DeskRelay tunnel is up at {0}. Pair the phone with the tunnel URL.', url),
          COPY_PAIRING(),
          SHOW_QR(),
        )
        .then((choice) => {
          if (choice === COPY_PAIRING()) void vscode.commands.executeCommand('deskrelay.copyPairing');
          else if (choice === SHOW_QR()) void vscode.commands.executeCommand('deskrelay.showPairing');
        });
      return url;
    } catch (err) {
      if (err instanceof TunnelAgentNotFound) return this.offerAgentInstall(err);
      if (cancelled) return undefined;
      void vscode.window.showErrorMessage(t('DeskRelay tunnel failed: {0}', firstLine(message(err))), SHOW_LOG(), RESTART_TUNNEL()).then((choice) => {
        if (choice === SHOW_LOG()) this.relay.log.show();
        else if (choice === RESTART_TUNNEL()) void vscode.commands.executeCommand('deskrelay.startTunnel');
      });
      return undefined;
    }
  }

  async stopTunnel(): Promise<void> {
    await this.relay.chat.stopTunnel();
  }

  /** The tunnel died or lost its connection after it was up. */
  tunnelDown(text: string): void {
    void vscode.window.showWarningMessage(t('DeskRelay tunnel is down: {0}', firstLine(text)), RESTART_TUNNEL(), SHOW_LOG()).then((choice) => {
      if (choice === RESTART_TUNNEL()) void vscode.commands.executeCommand('deskrelay.startTunnel');
      else if (choice === SHOW_LOG()) this.relay.log.show();
    });
  }

  /** Set Tunnel Token: the named tunnel's token or an ngrok authtoken, into SecretStorage (empty removes it). */
  async setTunnelToken(kind?: string, token?: string): Promise<boolean> {
    let chosen: TunnelKind | undefined = TUNNEL_KINDS.find((k) => k === kind);
    if (!chosen) {
      const current = tunnelSettings().kind;
      const items = TUNNEL_KINDS.filter((k) => tunnelSecretName(k)).map((k) => ({ label: k, description: tunnelSecretName(k), picked: k === current, tunnelKind: k }));
      // The configured kind when it takes a token; otherwise ask which.
      const pick = tunnelSecretName(current)
        ? items.find((i) => i.tunnelKind === current)
        : await vscode.window.showQuickPick(items, { title: t('DeskRelay: Set Tunnel Token'), placeHolder: t('Which tunnel?') });
      if (!pick) return false;
      chosen = pick.tunnelKind;
    }
    const name = tunnelSecretName(chosen);
    if (!name) {
      void vscode.window.showInformationMessage(t('DeskRelay: the {0} tunnel takes no token.', chosen));
      return false;
    }
    if (typeof token !== 'string') {
      token = await vscode.window.showInputBox({
        title: t('DeskRelay: {0}', name),
        prompt:
          !tunnelKindInfo(chosen).secret?.required
            ? t("Optional: ngrok uses the authtoken in its own config otherwise. Stored in VS Code's secret storage, never in settings. Leave empty to remove it.")
            : t("From the Cloudflare dashboard (Networks → Tunnels → your tunnel → the install command's token). Stored in VS Code's secret storage, never in settings. Leave empty to remove it."),
        password: true,
        ignoreFocusOut: true,
      });
      if (token === undefined) return false;
    }
    await this.tunnelSecrets.set(chosen, token.trim());
    this.relay.log.info(`${name} ${token.trim() ? 'stored' : 'removed'}`);
    void vscode.window.showInformationMessage(
      token.trim() ? t("DeskRelay: {0} stored in VS Code's secret storage.", name) : t('DeskRelay: {0} removed.', name),
    );
    return true;
  }

  private offerAgentInstall(err: TunnelAgentNotFound): undefined {
    return offerAgentInstall({ log: this.relay.log, context: this.relay.context, startTunnel: () => this.startTunnel() }, err);
  }
}
