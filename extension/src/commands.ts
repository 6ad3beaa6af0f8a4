import * as vscode from 'vscode';
import { installCloudflared, isLoopbackHost, isLoopbackUrl, LOOPBACK_WARNING, RelayStartError, tunnelKindInfo, tunnelSecretName, TUNNEL_KINDS, type TunnelKind } from '../../server/src';
import type { OutputLog } from './log';
import { PairingPanel } from './pairingPanel';

import { TunnelAgentNotFound, type DeviceChange, type RemoteChat, type Status } from './remoteChat';
import type { SecretKeySource, TunnelSecrets } from './secrets';
import { activeProviderId, providerEntries, relaySettings, rememberDevicesOn, setActiveProviderId, tunnelSettings } from './settings';

const firstLine = (s: string) => s.split('\n')[0] ?? s;
const t = vscode.l10n.t;

/** Button labels, localized; a choice is compared with the same string. */
const COPY_PAIRING = () => t('Copy Pairing JSON');
const SHOW_QR = () => t('Show Pairing QR Code');
const START_TUNNEL = () => t('Start Tunnel');
const RESTART_TUNNEL = () => t('Restart Tunnel');
const SHOW_LOG = () => t('Show Log');
const SET_TUNNEL_TOKEN = () => t('Set Tunnel Token');
const REVOKE = () => t('Revoke');
const FORGET_DEVICES = () => t('Forget Devices Too');
const KEEP_DEVICES = () => t('Keep Devices');

/** "just now", "5 min ago"…: when a device was last seen. */
function lastSeen(iso: string, now = Date.now()): string {
  const minutes = Math.round((now - Date.parse(iso)) / 60_000);
  if (minutes < 1) return t('seen just now');
  if (minutes < 60) return t('seen {0} min ago', String(minutes));
  const hours = Math.round(minutes / 60);
  if (hours < 24) return t('seen {0} h ago', String(hours));
  return t('seen {0} d ago', String(Math.round(hours / 24)));
}
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** What the user sees and answers; each command here is one `deskrelay.*` command. */
export class Commands {
  constructor(
    private readonly chat: RemoteChat,
    private readonly keys: SecretKeySource,
    private readonly log: OutputLog,
    private readonly context: vscode.ExtensionContext,
    private readonly tunnelSecrets: TunnelSecrets,
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
      this.offerStart(t('DeskRelay is not running, so there is nothing to pair with.'));
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
    if (!this.chat.status().running) this.offerStart(t('DeskRelay is not running yet.'));
    PairingPanel.show(this.context.extensionUri, this.chat);
  }

  /** Start Tunnel (starting the relay first when needed). Resolves with the tunnel URL, or undefined. */
  async startTunnel(): Promise<string | undefined> {
    if (!this.chat.status().running) {
      const started = await this.start();
      if (!started.running) return undefined;
    }
    let agent;
    try {
      agent = this.chat.findTunnelAgent();
    } catch (err) {
      if (err instanceof TunnelAgentNotFound) return this.offerAgentInstall(err);
      throw err;
    }
    const kind = this.chat.tunnelKind();
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
    this.log.info(`starting ${agent.title} (${agent.path})`);
    let cancelled = false;
    try {
      const url = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: t('DeskRelay tunnel'), cancellable: true },
        (progress, cancel) => {
          const sub = this.chat.onTunnelProgress((m) => progress.report({ message: m }));
          const stop = cancel.onCancellationRequested(() => {
            cancelled = true;
            void this.chat.stopTunnel();
          });
          progress.report({ message: t('Starting {0}…', agent.program) });
          return this.chat.startTunnel().finally(() => {
            sub.dispose();
            stop.dispose();
          });
        },
      );
      const lasting = this.chat.status().lastingUrl;
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
        if (choice === SHOW_LOG()) this.log.show();
        else if (choice === RESTART_TUNNEL()) void vscode.commands.executeCommand('deskrelay.startTunnel');
      });
      return undefined;
    }
  }

  async stopTunnel(): Promise<void> {
    await this.chat.stopTunnel();
  }

  /** The tunnel died or lost its connection after it was up. */
  tunnelDown(text: string): void {
    void vscode.window.showWarningMessage(t('DeskRelay tunnel is down: {0}', firstLine(text)), RESTART_TUNNEL(), SHOW_LOG()).then((choice) => {
      if (choice === RESTART_TUNNEL()) void vscode.commands.executeCommand('deskrelay.startTunnel');
      else if (choice === SHOW_LOG()) this.log.show();
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
    this.log.info(`${name} ${token.trim() ? 'stored' : 'removed'}`);
    void vscode.window.showInformationMessage(
      token.trim() ? t("DeskRelay: {0} stored in VS Code's secret storage.", name) : t('DeskRelay: {0} removed.', name),
    );
    return true;
  }

  /** The agent is missing: cloudflared can be installed for the user; for the others, their path setting. */
  private offerAgentInstall(err: TunnelAgentNotFound): undefined {
    if (err.program === 'cloudflared') return this.offerCloudflaredInstall(err.message);
    this.log.warn(err.message);
    const setPath = t('Set {0} Path', err.program);
    void vscode.window.showErrorMessage(t('DeskRelay: {0}', firstLine(err.message)), setPath, SHOW_LOG()).then((choice) => {
      if (choice === setPath) void vscode.commands.executeCommand('workbench.action.openSettings', `deskrelay.${err.program}Path`);
      else if (choice === SHOW_LOG()) this.log.show();
    });
    return undefined;
  }

  /** cloudflared is missing: offer to install it or set its path (the command itself returns at once). */
  private offerCloudflaredInstall(text: string): undefined {
    this.log.warn(text);
    const install = t('Install cloudflared');
    const setPath = t('Set cloudflared Path');
    void vscode.window.showErrorMessage(t('DeskRelay: {0}', firstLine(text)), install, setPath, SHOW_LOG()).then(async (choice) => {
      if (choice === install) {
        try {
          const dir = vscode.Uri.joinPath(this.context.globalStorageUri, 'bin').fsPath;
          const binary = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: t('DeskRelay: installing cloudflared…') },
            () => installCloudflared(dir),
          );
          this.log.info(`cloudflared installed at ${binary}`);
          await this.startTunnel();
        } catch (err) {
          this.log.error(message(err));
          void vscode.window.showErrorMessage(t('DeskRelay: {0}', firstLine(message(err))), SHOW_LOG()).then((c) => c && this.log.show());
        }
      } else if (choice === setPath) {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'deskrelay.cloudflaredPath');
      } else if (choice === SHOW_LOG()) {
        this.log.show();
      }
    });
    return undefined;
  }

  /** Select Provider: `id` sets it directly; without it, a quick pick with the active one marked. */
  async selectProvider(id?: string): Promise<string | undefined> {
    const entries = providerEntries();
    if (typeof id !== 'string') {
      const active = activeProviderId();
      type Item = vscode.QuickPickItem & { id?: string };
      const items: Item[] = entries.map((e) => ({
        id: e.id,
        label: `${e.id === active ? '$(check) ' : ''}${e.id}`,
        description: e.config ? [e.config.kind, e.config.model].filter(Boolean).join(' · ') : `$(warning) ${t('invalid')}`,
        detail: e.config ? e.config.baseUrl : e.problem,
        picked: e.id === active,
      }));
      items.push({ label: `$(gear) ${t('Edit providers in settings…')}` });
      const pick = await vscode.window.showQuickPick(items, { title: t('DeskRelay: Select Provider'), placeHolder: t('Active: {0}', active || t('(none)')) });
      if (!pick) return undefined;
      if (!pick.id) {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'deskrelay.providers');
        return undefined;
      }
      id = pick.id;
    }
    const entry = entries.find((e) => e.id === id);
    if (!entry) {
      void vscode.window.showErrorMessage(t('DeskRelay: no provider "{0}" in the deskrelay.providers setting.', id));
      return undefined;
    }
    await setActiveProviderId(id);
    this.log.info(`active provider: ${id}`);
    if (entry.problem) void vscode.window.showWarningMessage(t('DeskRelay: provider "{0}" is selected but its settings are invalid: {1}', id, entry.problem));
    else if (entry.config?.kind === 'cloud') void vscode.window.showWarningMessage(t("DeskRelay: \"{0}\" is the cloud provider; the phone's chat is refused until you switch to a local provider.", id));
    return id;
  }

  /** Set Provider API Key: asks with a password box unless given (an empty key removes it). */
  async setApiKey(providerId?: string, key?: string): Promise<boolean> {
    if (typeof providerId !== 'string') {
      const items = providerEntries()
        .filter((e) => e.config?.kind !== 'cloud')
        .map((e) => ({ label: e.id, description: e.config ? e.config.kind : t('invalid'), id: e.id }));
      const pick = await vscode.window.showQuickPick(items, { title: t('DeskRelay: Set Provider API Key'), placeHolder: t('Which provider?') });
      if (!pick) return false;
      providerId = pick.id;
    }
    if (typeof key !== 'string') {
      const had = await this.keys.has(providerId);
      key = await vscode.window.showInputBox({
        title: t('DeskRelay: API key for "{0}"', providerId),
        prompt: had ? t("Stored in VS Code's secret storage, never in settings. Leave empty to remove the stored key.") : t("Stored in VS Code's secret storage, never in settings."),
        password: true,
        ignoreFocusOut: true,
      });
      if (key === undefined) return false;
    }
    await this.keys.set(providerId, key.trim());
    this.log.info(`API key for provider ${providerId} ${key.trim() ? 'stored' : 'removed'}`);
    void vscode.window.showInformationMessage(
      key.trim() ? t('DeskRelay: API key for "{0}" stored in VS Code\'s secret storage.', providerId) : t('DeskRelay: API key for "{0}" removed.', providerId),
    );
    return true;
  }

  /**
   * Rotate Token. Remembered devices would stay paired through it, so the user is asked whether
   * to forget them too (`forgetDevices` answers for tests). Without remembering, devices end with
   * the old token anyway.
   */
  async rotateToken(forgetDevices?: boolean): Promise<Status> {
    if (!this.chat.status().running) {
      this.offerStart(t('DeskRelay is not running; a new token is made every time it starts.'));
      return this.chat.status();
    }
    // Only a boolean answers the question: a menu may pass other arguments.
    const answered = typeof forgetDevices === 'boolean';
    let forget = (answered && forgetDevices) || !rememberDevicesOn();
    if (!answered && rememberDevicesOn() && this.chat.devices().length > 0) {
      const choice = await vscode.window.showWarningMessage(
        t('Rotate the pairing token? Paired devices keep their own tokens unless you forget them too.'),
        { modal: true },
        FORGET_DEVICES(),
        KEEP_DEVICES(),
      );
      if (choice === undefined) return this.chat.status();
      forget = choice === FORGET_DEVICES();
    }
    const status = await this.chat.rotateToken(forget);
    this.log.info(`token rotated${forget ? '; devices forgotten' : ''}`);
    void vscode.window
      .showWarningMessage(t('DeskRelay has a new token; the old one stopped working. Pair the phone again.'), COPY_PAIRING(), SHOW_QR())
      .then((choice) => {
        if (choice === COPY_PAIRING()) void vscode.commands.executeCommand('deskrelay.copyPairing');
        else if (choice === SHOW_QR()) void vscode.commands.executeCommand('deskrelay.showPairing');
      });
    return status;
  }

  /**
   * Manage Devices: a quick pick of the paired devices (name, last seen, connected); picking one
   * offers Revoke. `revokeId` revokes without asking (tests, scripts). Returns the removed id.
   */
  async manageDevices(revokeId?: string): Promise<string | undefined> {
    if (!this.chat.status().running) {
      this.offerStart(t('DeskRelay is not running; devices are listed while it runs.'));
      return undefined;
    }
    let id = typeof revokeId === 'string' ? revokeId : undefined;
    if (id === undefined) {
      const devices = this.chat.devices();
      if (devices.length === 0) {
        void vscode.window.showInformationMessage(t('No phone is paired as a device yet. The phone web client registers itself when it pairs.'));
        return undefined;
      }
      type Item = vscode.QuickPickItem & { id: string };
      const items: Item[] = devices.map((d) => ({
        id: d.id,
        label: `${d.connected ? '$(circle-filled)' : '$(circle-outline)'} ${d.name}`,
        description: `${d.connected ? t('connected') : t('not connected')} · ${lastSeen(d.lastSeen)}`,
        detail: d.id,
      }));
      const pick = await vscode.window.showQuickPick(items, { title: t('DeskRelay: Manage Devices'), placeHolder: t('Pick a device to revoke') });
      if (!pick) return undefined;
      const confirm = await vscode.window.showWarningMessage(
        t('Revoke "{0}"? Its token stops working and its open chats end at once.', pick.label.replace(/^\$\([^)]*\) /, '')),
        { modal: true },
        REVOKE(),
      );
      if (confirm !== REVOKE()) return undefined;
      id = pick.id;
    }
    if (!(await this.chat.revokeDevice(id))) {
      void vscode.window.showErrorMessage(t('DeskRelay: no device "{0}" is paired.', id));
      return undefined;
    }
    this.log.info(`device ${id} revoked at the desk`);
    return id;
  }

  /** Forget All Devices: every device's token stops working, remembered ones are deleted. `confirmed` skips the question. */
  async forgetDevices(confirmed?: boolean): Promise<number | undefined> {
    if (confirmed !== true) {
      const forget = t('Forget All Devices');
      const choice = await vscode.window.showWarningMessage(t('Forget every paired device? Each phone has to scan the pairing code again.'), { modal: true }, forget);
      if (choice !== forget) return undefined;
    }
    const count = await this.chat.forgetDevices();
    this.log.info(`devices forgotten (${count})`);
    void vscode.window.showInformationMessage(t('DeskRelay forgot every paired device; phones pair again with the pairing code.'));
    return count;
  }

  /** A phone registered: say so, with Revoke for a device the user does not recognise. */
  deviceChanged(change: DeviceChange): void {
    if (change.type !== 'registered') return;
    const { id, name } = change.device;
    void vscode.window.showInformationMessage(t('DeskRelay: "{0}" paired.', name), REVOKE()).then((choice) => {
      if (choice === REVOKE()) void this.manageDevices(id);
    });
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

  private offerStart(text: string): void {
    void vscode.window.showWarningMessage(text, t('Start Remote Chat')).then((choice) => {
      if (choice) void vscode.commands.executeCommand('deskrelay.start');
    });
  }
}
