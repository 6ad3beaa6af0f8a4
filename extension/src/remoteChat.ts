import * as vscode from 'vscode';
import {
  configDir,
  devicesPath,
  forgetRememberedDevices,
  RelaySession,
  TunnelError,
  tunnelAgentFor,
  tunnelKindInfo,
  type AdapterFactories,
  type AgentHost,
  type DeviceChange,
  type DeviceInfo,
  type Pairing,
  type ProbeOptions,
  type SessionStatus,
  type TunnelKind,
  type TunnelKindInfo,
} from '../../server/src';

import { Disposable } from './dispose';
import type { OutputLog } from './log';
import type { SecretKeySource, TunnelSecrets } from './secrets';
import { activeProviderId, keepConversationsOn, pushNotificationsOn, relaySettings, rememberDevicesOn, tunnelSettings, type SettingsProviderSource } from './settings';

export type { DeviceChange, DeviceInfo, Pairing } from '../../server/src';

export interface Status extends SessionStatus {
  activeProvider: string;
  providerReady: boolean;
  /** Paired devices (issue 26) and how many of them are connected now. */
  devices: number;
  connectedDevices: number;
}

/** The tunnel agent's program (cloudflared, tailscale, ngrok) could not be found: the user can install it or set its path. */
export class TunnelAgentNotFound extends Error {
  constructor(
    message: string,
    /** The missing agent's kind, as its folder describes it (program, path setting, whether DeskRelay can install it). */
    readonly agent: TunnelKindInfo,
  ) {
    super(message);
  }
}

export interface RemoteChatDeps {
  version: string;
  providers: SettingsProviderSource;
  keys: SecretKeySource;
  log: OutputLog;
  /** Where "Install cloudflared" puts the binary (the extension's global storage). */
  cloudflaredDir: string;
  /** The named tunnel's token and the ngrok authtoken. */
  tunnelSecrets: TunnelSecrets;
  /** Adapters for kinds only the extension serves (`vscode-lm`). */
  adapters?: AdapterFactories;
  /** The workspace agent's folders (off unless the user's setting and workspace trust allow). */
  agent?: AgentHost;
  /** Where kept conversations go (issue 30): the extension's global storage. */
  conversationsDir: string;
}

/**
 * The VS Code face of the relay session the CLI runs too (server/src/session/relaySession.ts):
 * settings in, VS Code events out. No UI here: commands/ asks the user things and shows the outcome.
 */
export class RemoteChat extends Disposable {
  private readonly session: RelaySession;
  /** The current kind's secret, read from SecretStorage right before a tunnel start; never logged. */
  private tunnelToken: string | undefined;
  private readonly changed = this.register(new vscode.EventEmitter<void>());
  private readonly tunnelDown = this.register(new vscode.EventEmitter<string>());
  private readonly tunnelProgress = this.register(new vscode.EventEmitter<string>());
  private readonly deviceChange = this.register(new vscode.EventEmitter<DeviceChange>());
  /** A device registered, was removed, or all were forgotten. */
  readonly onDeviceChange = this.deviceChange.event;
  readonly onDidChange = this.changed.event;
  /** The tunnel went down after it was up (message for the user, already logged). */
  readonly onTunnelDown = this.tunnelDown.event;
  readonly onTunnelProgress = this.tunnelProgress.event;

  constructor(private readonly deps: RemoteChatDeps) {
    super();
    const { log, providers, keys, version, adapters, agent } = deps;
    this.session = new RelaySession({
      // Settings are read at every start: a changed port or bind address applies on restart.
      relay: () => {
        const s = relaySettings();
        return {
          host: s.bindAddress,
          port: s.port,
          version,
          providers,
          keys,
          adapters,
          agent,
          workspaces: () => vscode.workspace.workspaceFolders?.length ?? 0,
          maxConcurrentStreams: () => relaySettings().maxConcurrentStreams,
          pushNotifications: pushNotificationsOn,
          rememberDevices: rememberDevicesOn(),
          keepConversations: keepConversationsOn,
          conversationsDir: deps.conversationsDir,
          conversationsHowToEnable: 'Turn it on at the desk: the deskrelay.keepConversations setting in VS Code.',
          logger: log,
          onRequestLog: (e) => log.request(e),
          onDeviceChange: (change) => {
            this.deviceChange.fire(change);
            this.changed.fire();
          },
        };
      },
      // Settings are read at every tunnel start; the token was fetched from SecretStorage just before.
      tunnel: () => {
        const t = tunnelSettings();
        return tunnelAgentFor({
          kind: t.kind,
          cloudflaredPath: t.cloudflaredPath || undefined,
          cloudflaredPackageDir: deps.cloudflaredDir,
          tailscalePath: t.tailscalePath || undefined,
          ngrokPath: t.ngrokPath || undefined,
          hostname: t.hostname || undefined,
          token: this.tunnelToken,
        });
      },
      logger: log,
    });
    this.session.on('change', () => this.changed.fire());
    this.session.on('tunnel-down', (m) => this.tunnelDown.fire(m));
    this.session.on('tunnel-progress', (m) => this.tunnelProgress.fire(m));
  }

  /** Test seam: how the tunnel's health probe reaches a stand-in edge. Production leaves it unset. */
  get tunnelProbe(): ProbeOptions | undefined {
    return this.session.tunnelProbe;
  }
  set tunnelProbe(probe: ProbeOptions | undefined) {
    this.session.tunnelProbe = probe;
  }

  status(): Status {
    const devices = this.devices();
    return {
      ...this.session.status(),
      activeProvider: activeProviderId(),
      providerReady: this.deps.providers.active().ok,
      devices: devices.length,
      connectedDevices: devices.filter((d) => d.connected).length,
    };
  }

  /** The paired devices of the running relay (none while stopped). */
  devices(): DeviceInfo[] {
    return this.session.relay?.devices() ?? [];
  }

  /** Removes a device: its token stops working and its streams end at once. False when it is not paired. */
  async revokeDevice(id: string): Promise<boolean> {
    return (await this.session.relay?.revokeDevice(id)) ?? false;
  }

  /** The desk allows (or denies) a device the agent; remembered with the device. False when it is not paired. */
  async allowAgent(id: string, allowed: boolean): Promise<boolean> {
    return (await this.session.relay?.allowAgent(id, allowed)) ?? false;
  }

  /** A one-time pairing code for a phone (the previous one stops); undefined while stopped. */
  pairingCode(): { code: string; expiresAt: number } | undefined {
    return this.session.relay?.pairingCode();
  }

  /** Forgets every device, remembered ones included (also while stopped); returns how many the running relay had. */
  async forgetDevices(): Promise<number> {
    const relay = this.session.relay;
    if (relay) return relay.forgetDevices();
    await forgetRememberedDevices(devicesPath(configDir()));
    return 0;
  }

  /** The running relay's loopback address and token, for the desk's own views (never shown or logged). */
  loopback(): { url: string; token: string } | undefined {
    const relay = this.session.relay;
    return relay?.url && relay.token ? { url: relay.url, token: relay.token } : undefined;
  }

  pairing(): Pairing | undefined {
    return this.session.pairing();
  }

  async start(): Promise<Status> {
    await this.session.start();
    return this.status();
  }

  stop(): Promise<void> {
    return this.session.stop();
  }

  /** A new pairing token; with `forgetDevices`, every device is removed first (else remembered ones stay paired). */
  async rotateToken(forgetDevices = false): Promise<Status> {
    if (forgetDevices) await this.forgetDevices();
    await this.session.rotateToken();
    return this.status();
  }

  async restart(): Promise<Status> {
    this.tunnelToken = await this.deps.tunnelSecrets.get(tunnelSettings().kind);
    try {
      await this.notFoundAs(() => this.session.restart());
    } finally {
      this.tunnelToken = undefined;
    }
    return this.status();
  }

  /** The configured tunnel kind (deskrelay.tunnel.kind). */
  tunnelKind(): TunnelKind {
    return tunnelSettings().kind;
  }

  /** Finds the configured agent's program (its path setting, PATH, …); throws TunnelAgentNotFound. Returns it and its name. */
  findTunnelAgent(): { program: string; path: string; title: string } {
    return this.notFoundAs(() => {
      const { agent, program } = this.session.locateTunnelAgent();
      return { program: agent.program, path: program, title: agent.title };
    });
  }

  /** Starts (or, when down, restarts) the tunnel to the relay; resolves with its public URL. */
  async startTunnel(): Promise<string> {
    this.tunnelToken = await this.deps.tunnelSecrets.get(tunnelSettings().kind);
    try {
      return await this.notFoundAs(() => this.session.startTunnel());
    } finally {
      this.tunnelToken = undefined;
    }
  }

  stopTunnel(): Promise<void> {
    return this.session.stopTunnel();
  }


  /** Everything off, for deactivate. */
  async shutdown(): Promise<void> {
    try {
      await this.session.dispose();
    } finally {
      this.dispose();
    }
  }

  /** A missing agent becomes TunnelAgentNotFound, which commands/agentInstall.ts answers with an install offer (where the kind has one) or the path setting. */
  private notFoundAs<T>(run: () => T): T {
    const mapped = (err: unknown): never => {
      if (err instanceof TunnelError && err.code === 'agent-missing') throw new TunnelAgentNotFound(err.message, tunnelKindInfo(tunnelSettings().kind));
      throw err;
    };
    try {
      const result = run();
      return (result instanceof Promise ? result.catch(mapped) : result) as T;
    } catch (err) {
      return mapped(err);
    }
  }
}
