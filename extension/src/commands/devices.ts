import * as vscode from 'vscode';
import type { OutputLog } from '../log';
import type { DeviceChange, DeviceInfo, RemoteChat, Status } from '../remoteChat';
import { rememberDevicesOn } from '../settings';
import { ALLOW, COPY_PAIRING, DENY, FORGET_DEVICES, KEEP_DEVICES, offerStart, REVOKE, SHOW_QR } from './ui';

const t = vscode.l10n.t;

/** "just now", "5 min ago"…: when a device was last seen. */
function lastSeen(iso: string, now = Date.now()): string {
  const minutes = Math.round((now - Date.parse(iso)) / 60_000);
  if (minutes < 1) return t('seen just now');
  if (minutes < 60) return t('seen {0} min ago', String(minutes));
  const hours = Math.round(minutes / 60);
  if (hours < 24) return t('seen {0} h ago', String(hours));
  return t('seen {0} d ago', String(Math.round(hours / 24)));
}

/** What Manage Devices can do to one device. */
export type DeviceAction = 'revoke' | 'allow' | 'deny';

/** A device's agent access as Manage Devices words it. */
function agentLabel(agent: DeviceInfo['agent']): string {
  if (agent === true) return t('agent allowed');
  if (agent === 'pending') return t('asks for the agent');
  return t('no agent');
}

/** The pairing token and the paired devices: rotate, revoke, forget, pairing codes, agent access, and a new phone's notice. */
export class DeviceCommands {
  /**
   * Shows a notification with buttons and resolves to the one clicked. The extension's test API
   * answers it in the real VS Code suite (a notification's buttons cannot be clicked from there).
   */
  notify: (message: string, ...items: string[]) => Thenable<string | undefined> = (message, ...items) => vscode.window.showWarningMessage(message, ...items);

  constructor(
    private readonly chat: RemoteChat,
    private readonly log: OutputLog,
  ) {}

  /**
   * Rotate Token. Remembered devices would stay paired through it, so the user is asked whether
   * to forget them too (`forgetDevices` answers for tests). Without remembering, devices end with
   * the old token anyway.
   */
  async rotateToken(forgetDevices?: boolean): Promise<Status> {
    if (!this.chat.status().running) {
      offerStart(t('DeskRelay is not running; a new token is made every time it starts.'));
      return this.chat.status();
    }
    // Only a boolean answers the question: a menu may pass other arguments.
    const answered = typeof forgetDevices === 'boolean';
    let forget = (answered && forgetDevices) || !rememberDevicesOn();
    if (!answered && rememberDevicesOn() && this.chat.devices().length > 0) {
      const choice = await vscode.window.showWarningMessage(
        t('Rotate the pairing token? Paired phones keep their own tokens (and stay paired) unless you forget them too.'),
        { modal: true },
        KEEP_DEVICES(),
        FORGET_DEVICES(),
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
   * Pair a Phone with a Code: a one-time code (8 characters, 5 minutes, single use) the phone's
   * installed app takes instead of the QR code. Returns it (tests).
   */
  async pairWithCode(): Promise<string | undefined> {
    const issued = this.chat.pairingCode();
    if (!issued) {
      offerStart(t('DeskRelay is not running; start it to make a pairing code.'));
      return undefined;
    }
    const shown = `${issued.code.slice(0, 4)} ${issued.code.slice(4)}`;
    const until = new Date(issued.expiresAt).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    this.log.info('pairing code made');
    void vscode.window.showInformationMessage(t('Pairing code: {0}. On the phone: Enter a pairing code. It works once, until {1}.', shown, until), { modal: true });
    return issued.code;
  }

  /**
   * Manage Devices: a quick pick of the paired devices (name, last seen, connected, agent access);
   * picking one offers Allow or Deny agent access and Revoke. A device id revokes it without
   * asking, `{id, action}` does that action without asking (tests, scripts). Returns the id acted on.
   */
  async manageDevices(what?: string | { id: string; action: DeviceAction }): Promise<string | undefined> {
    if (!this.chat.status().running) {
      offerStart(t('DeskRelay is not running; devices are listed while it runs.'));
      return undefined;
    }
    if (typeof what === 'object' && what !== null && typeof what.id === 'string' && what.action !== 'revoke') {
      return this.setAgent(what.id, what.action === 'allow');
    }
    let id = typeof what === 'string' ? what : typeof what === 'object' && what !== null && typeof what.id === 'string' ? what.id : undefined;
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
        description: `${d.connected ? t('connected') : t('not connected')} · ${lastSeen(d.lastSeen)} · ${agentLabel(d.agent)}`,
        detail: d.id,
      }));
      const pick = await vscode.window.showQuickPick(items, { title: t('DeskRelay: Manage Devices'), placeHolder: t('Pick a device') });
      if (!pick) return undefined;
      type ActionItem = vscode.QuickPickItem & { action: DeviceAction };
      const allowed = devices.find((d) => d.id === pick.id)?.agent === true;
      const actions: ActionItem[] = [
        allowed
          ? { action: 'deny', label: `$(circle-slash) ${t('Deny agent access')}`, detail: t('The phone can no longer start or answer agent sessions.') }
          : { action: 'allow', label: `$(check) ${t('Allow agent access')}`, detail: t('The phone may drive the workspace agent; every decision it sends is signed with its own key.') },
        { action: 'revoke', label: `$(trash) ${t('Revoke')}`, detail: t('Its token stops working and everything it has open ends at once.') },
      ];
      const action = await vscode.window.showQuickPick(actions, { title: pick.label.replace(/^\$\([^)]*\) /, '') });
      if (!action) return undefined;
      if (action.action !== 'revoke') return this.setAgent(pick.id, action.action === 'allow');
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

  private async setAgent(id: string, allowed: boolean): Promise<string | undefined> {
    if (!(await this.chat.allowAgent(id, allowed))) {
      void vscode.window.showErrorMessage(t('DeskRelay: no device "{0}" is paired.', id));
      return undefined;
    }
    this.log.info(`device ${id} ${allowed ? 'allowed' : 'denied'} the agent at the desk`);
    return id;
  }

  /** A phone registered: say so, with Revoke for a device the user does not recognise. A phone asking for the agent: Allow / Deny. */
  deviceChanged(change: DeviceChange): void {
    if (change.type === 'agent-requested') {
      const { id, name } = change.device;
      void this.notify(t('{0} wants to use the agent in {1}.', name, change.folders.join(', ')), ALLOW(), DENY()).then((choice) => {
        if (choice === ALLOW() || choice === DENY()) void this.setAgent(id, choice === ALLOW());
      });
      return;
    }
    if (change.type !== 'registered') return;
    const { id, name } = change.device;
    void vscode.window.showInformationMessage(t('DeskRelay: "{0}" paired.', name), REVOKE()).then((choice) => {
      if (choice === REVOKE()) void this.manageDevices(id);
    });
  }
}
