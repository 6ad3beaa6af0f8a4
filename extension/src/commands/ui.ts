import * as vscode from 'vscode';

export const t = vscode.l10n.t;
export const firstLine = (s: string) => s.split('\n')[0] ?? s;
export const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Button labels, localized; a choice is compared with the same string. */
export const COPY_PAIRING = () => t('Copy Pairing JSON');
export const SHOW_QR = () => t('Show Pairing QR Code');
export const START_TUNNEL = () => t('Start Tunnel');
export const RESTART_TUNNEL = () => t('Restart Tunnel');
export const SHOW_LOG = () => t('Show Log');
export const SET_TUNNEL_TOKEN = () => t('Set Tunnel Token');
export const REVOKE = () => t('Revoke');
export const FORGET_DEVICES = () => t('Rotate and forget phones');
export const KEEP_DEVICES = () => t('Rotate and keep phones');
export const ALLOW = () => t('Allow');
export const DENY = () => t('Deny');

export function offerStart(text: string): void {
  void vscode.window.showWarningMessage(text, t('Start Remote Chat')).then((choice) => {
    if (choice) void vscode.commands.executeCommand('deskrelay.start');
  });
}
