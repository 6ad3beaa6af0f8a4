import type * as vscode from 'vscode';
import type { OutputLog } from '../log';
import type { RemoteChat } from '../remoteChat';
import type { SecretKeySource, TunnelSecrets } from '../secrets';
import { DeviceCommands } from './devices';
import { ProviderCommands } from './providers';
import { RelayCommands } from './relay';
import { TunnelCommands } from './tunnel';

/** What the user sees and answers; each method is one `deskrelay.*` command, grouped by what it acts on. */
export function makeCommands(chat: RemoteChat, keys: SecretKeySource, log: OutputLog, context: vscode.ExtensionContext, tunnelSecrets: TunnelSecrets) {
  const relay = new RelayCommands(chat, log, context);
  return {
    relay,
    tunnel: new TunnelCommands(relay, tunnelSecrets),
    devices: new DeviceCommands(chat, log),
    providers: new ProviderCommands(keys, log),
  };
}
