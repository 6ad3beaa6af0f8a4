import * as vscode from 'vscode';
import { installCloudflared } from '../../../server/src';
import type { OutputLog } from '../log';
import type { TunnelAgentNotFound } from '../remoteChat';
import { firstLine, message, SHOW_LOG } from './ui';

const t = vscode.l10n.t;

/** What the install offer needs from the tunnel commands: where to log, where to install, how to try again. */
export interface InstallHost {
  log: OutputLog;
  context: vscode.ExtensionContext;
  startTunnel(): Promise<unknown>;
}

/** The agent is missing: cloudflared can be installed for the user; for the others, their path setting. */
export function offerAgentInstall(host: InstallHost, err: TunnelAgentNotFound): undefined {
  if (err.program === 'cloudflared') return offerCloudflaredInstall(host, err.message);
  host.log.warn(err.message);
  const setPath = t('Set {0} Path', err.program);
  void vscode.window.showErrorMessage(t('DeskRelay: {0}', firstLine(err.message)), setPath, SHOW_LOG()).then((choice) => {
    if (choice === setPath) void vscode.commands.executeCommand('workbench.action.openSettings', `deskrelay.${err.program}Path`);
    else if (choice === SHOW_LOG()) host.log.show();
  });
  return undefined;
}

/** cloudflared is missing: offer to install it or set its path (the command itself returns at once). */
function offerCloudflaredInstall(host: InstallHost, text: string): undefined {
  host.log.warn(text);
  const install = t('Install cloudflared');
  const setPath = t('Set cloudflared Path');
  void vscode.window.showErrorMessage(t('DeskRelay: {0}', firstLine(text)), install, setPath, SHOW_LOG()).then(async (choice) => {
    if (choice === install) {
      try {
        const dir = vscode.Uri.joinPath(host.context.globalStorageUri, 'bin').fsPath;
        const binary = await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: t('DeskRelay: installing cloudflared…') },
          () => installCloudflared(dir),
        );
        host.log.info(`cloudflared installed at ${binary}`);
        await host.startTunnel();
      } catch (err) {
        host.log.error(message(err));
        void vscode.window.showErrorMessage(t('DeskRelay: {0}', firstLine(message(err))), SHOW_LOG()).then((c) => c && host.log.show());
      }
    } else if (choice === setPath) {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'deskrelay.cloudflaredPath');
    } else if (choice === SHOW_LOG()) {
      host.log.show();
    }
  });
  return undefined;
}
