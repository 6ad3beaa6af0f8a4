import * as vscode from 'vscode';
import type { OutputLog } from '../log';
import type { DeviceChange, RemoteChat, Status } from '../remoteChat';
import { rememberDevicesOn } from '../settings';
import { COPY_PAIRING, FORGET_DEVICES, KEEP_DEVICES, offerStart, REVOKE, SHOW_QR } from './ui';

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

/** The pairing token and the paired devices: rotate, revoke, forget, and a new phone's notice. */
export class DeviceCommands {
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
      offerStart(t('DeskRelay is not running; devices are listed while it runs.'));
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
}
