import * as vscode from 'vscode';
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

/** The agent is missing: DeskRelay installs it where its kind says it can (cloudflared); otherwise the user sets its path. */
export function offerAgentInstall(host: InstallHost, err: TunnelAgentNotFound): undefined {
  const { program, pathSetting, install } = err.agent;
  host.log.warn(err.message);
  const installIt = install && t('Install {0}', program);
  const setPath = t('Set {0} Path', program);
  const choices = [...(installIt ? [installIt] : []), setPath, SHOW_LOG()];
  void vscode.window.showErrorMessage(t('DeskRelay: {0}', firstLine(err.message)), ...choices).then(async (choice) => {
    if (choice === undefined) return;
    if (choice === installIt) await installAgent(host, program, install!);
    else if (choice === setPath) void vscode.commands.executeCommand('workbench.action.openSettings', pathSetting);
    else if (choice === SHOW_LOG()) host.log.show();
  });
  return undefined;
}

/** Installs the agent into the extension's storage, then starts the tunnel again. */
async function installAgent(host: InstallHost, program: string, install: (dir: string) => Promise<string>): Promise<void> {
  try {
    const dir = vscode.Uri.joinPath(host.context.globalStorageUri, 'bin').fsPath;
    const binary = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: t('DeskRelay: installing {0}…', program) }, () => install(dir));
    host.log.info(`${program} installed at ${binary}`);
    await host.startTunnel();
  } catch (err) {
    host.log.error(message(err));
    void vscode.window.showErrorMessage(t('DeskRelay: {0}', firstLine(message(err))), SHOW_LOG()).then((c) => c && host.log.show());
  }
}
