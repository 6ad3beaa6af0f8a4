import * as vscode from 'vscode';
import { ChatsView } from './chatsView';
import { makeCommands } from './commands';
import { OutputLog } from './log';
import { RemoteChat, type Status } from './remoteChat';
import { SecretKeySource, TunnelSecrets } from './secrets';
import { affectsRelayAddress, relaySettings, SECTION, SettingsProviderSource } from './settings';
import { StatusBar } from './statusBar';
import { ProviderWizard, type AddProviderAnswers } from './providerWizard';
import { vscodeLmAdapters } from './vscodeLm';
import { ExtensionAgentHost } from './agent';
import { AgentDesk } from './agentView';
import type { DeviceAction } from './commands/devices';
import type { ProbeOptions } from '../../server/src';

/** What activate() returns: the state (never the token), plus the one test seam. */
export interface DeskRelayApi {
  status(): Status;
  /** Tests only: lets the tunnel's health probe reach a stand-in cloudflared's edge. */
  setTunnelProbe(probe: ProbeOptions | undefined): void;
  /** What the DeskRelay Chats view lists now (tests read the view through this). */
  chats(): Promise<{ id: string; title: string; kind: string }[]>;
  /** Tests only: an open chat panel's messages as its webview shows them (HTML). */
  renderedChat(id: string): Promise<string> | undefined;
  /** Tests only: a row of the DeskRelay Chats view as VS Code shows it (its command). */
  chatItem(id: string): Promise<vscode.TreeItem | undefined>;
  /** Where kept conversations are written (the extension's global storage). */
  conversationsDir: string;
  /** Tests only: the DeskRelay view's agent sessions, as its rows and webviews see them. */
  agentDesk: AgentDesk;
  /**
   * Tests only: answers DeskRelay's device notifications (a phone asking for the agent) with the
   * button `answer` returns, as a person clicking it would; VS Code's notifications cannot be
   * clicked from the extension host.
   */
  answerDeviceNotifications(answer: (message: string, buttons: string[]) => string | undefined): void;
}

let chat: RemoteChat | undefined;

export function activate(context: vscode.ExtensionContext): DeskRelayApi {
  const log = new OutputLog(vscode.window.createOutputChannel('DeskRelay'));
  context.subscriptions.push(log.channel);
  const keys = new SecretKeySource(context.secrets);
  const tunnelSecrets = new TunnelSecrets(context.secrets);
  const agent = new ExtensionAgentHost();
  context.subscriptions.push(agent);
  const conversationsDir = vscode.Uri.joinPath(context.globalStorageUri, 'conversations').fsPath;
  const remote = new RemoteChat({
    version: String(context.extension.packageJSON.version),
    providers: new SettingsProviderSource(log),
    keys,
    log,
    cloudflaredDir: vscode.Uri.joinPath(context.globalStorageUri, 'bin').fsPath,
    conversationsDir,
    tunnelSecrets,
    adapters: vscodeLmAdapters(context),
    agent,
  });
  const wizard = new ProviderWizard(context, keys, log);
  chat = remote;
  const commands = makeCommands(remote, keys, log, context, tunnelSecrets);
  const chats = new ChatsView(remote, context.extensionUri);
  const setContext = () => {
    const s = remote.status();
    void vscode.commands.executeCommand('setContext', 'deskrelay.running', s.running);
    void vscode.commands.executeCommand('setContext', 'deskrelay.tunnel', s.tunnel);
  };

  const agentDesk = new AgentDesk(agent, context.extensionUri);
  context.subscriptions.push(
    agentDesk,
    vscode.commands.registerCommand('deskrelay.agent.open', (id: unknown) => typeof id === 'string' && void agentDesk.open(id)),
    remote,
    new StatusBar(remote),
    remote.onDidChange(setContext),
    remote.onTunnelDown((m) => commands.tunnel.tunnelDown(m)),
    remote.onDeviceChange((change) => commands.devices.deviceChanged(change)),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration(SECTION) && void commands.relay.settingsChanged(affectsRelayAddress(e))),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration(`${SECTION}.keepConversations`) && chats.refresh()),
    vscode.commands.registerCommand('deskrelay.start', () => commands.relay.start()),
    vscode.commands.registerCommand('deskrelay.stop', () => commands.relay.stop()),
    vscode.commands.registerCommand('deskrelay.copyPairing', () => commands.relay.copyPairing()),
    vscode.commands.registerCommand('deskrelay.showPairing', () => commands.relay.showPairing()),
    vscode.commands.registerCommand('deskrelay.startTunnel', () => commands.tunnel.startTunnel()),
    vscode.commands.registerCommand('deskrelay.stopTunnel', () => commands.tunnel.stopTunnel()),
    vscode.commands.registerCommand('deskrelay.setTunnelToken', (kind?: string, token?: string) => commands.tunnel.setTunnelToken(kind, token)),
    vscode.commands.registerCommand('deskrelay.selectProvider', (id?: string) => commands.providers.selectProvider(id)),
    vscode.commands.registerCommand('deskrelay.setApiKey', (id?: string, key?: string) => commands.providers.setApiKey(id, key)),
    vscode.commands.registerCommand('deskrelay.addProvider', (answers?: AddProviderAnswers) => wizard.addProvider(answers)),
    vscode.commands.registerCommand('deskrelay.removeProvider', (id?: string, confirmed?: boolean) => wizard.removeProvider(id, confirmed)),
    vscode.commands.registerCommand('deskrelay.editModel', (id?: string, model?: string) => wizard.editModel(id, model)),
    vscode.commands.registerCommand('deskrelay.allowVsCodeModels', () => wizard.allowVsCodeModels()),
    vscode.commands.registerCommand('deskrelay.rotateToken', (forgetDevices?: boolean) => commands.devices.rotateToken(forgetDevices)),
    vscode.commands.registerCommand('deskrelay.manageDevices', (what?: string | { id: string; action: DeviceAction }) => commands.devices.manageDevices(what)),
    vscode.commands.registerCommand('deskrelay.pairWithCode', () => commands.devices.pairWithCode()),
    vscode.commands.registerCommand('deskrelay.forgetDevices', (confirmed?: boolean) => commands.devices.forgetDevices(confirmed)),
    vscode.commands.registerCommand('deskrelay.showLog', () => commands.relay.showLog()),
    chats,
    vscode.commands.registerCommand('deskrelay.openConversation', (id?: string) => chats.open(id)),
    vscode.commands.registerCommand('deskrelay.newConversation', () => chats.newChat()),
    vscode.commands.registerCommand('deskrelay.exportConversation', (id?: string) => chats.export(id)),
    vscode.commands.registerCommand('deskrelay.refreshConversations', () => chats.refresh()),
    vscode.commands.registerCommand('deskrelay.showActions', () => commands.relay.showActions()),
  );
  setContext();
  if (relaySettings().autoStart) void commands.relay.start();

  return {
    status: () => remote.status(),
    setTunnelProbe: (probe) => {
      remote.tunnelProbe = probe;
    },
    chats: () => chats.getChildren(),
    renderedChat: (id) => chats.rendered(id),
    chatItem: async (id) => {
      const row = (await chats.getChildren()).find((s) => s.id === id);
      return row && chats.getTreeItem(row);
    },
    conversationsDir,
    agentDesk,
    answerDeviceNotifications: (answer) => {
      commands.devices.notify = async (message, ...items) => answer(message, items);
    },
  };
}

/** Stops the relay and the tunnel; the token file goes with them. */
export async function deactivate(): Promise<void> {
  const current = chat;
  chat = undefined;
  await current?.shutdown();
}
