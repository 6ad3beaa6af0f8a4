import * as vscode from 'vscode';
import { findCloudflared, pairingPayload, QuickTunnel, RelayServer, stopAllTunnelsSync, webClientLink, type ProbeOptions, type TunnelState } from '../../server/src';
import { Disposable } from './dispose';
import type { OutputLog } from './log';
import type { SecretKeySource } from './secrets';
import { activeProviderId, relaySettings, type SettingsProviderSource } from './settings';

export interface Status {
  running: boolean;
  /** The relay's own base URL (loopback unless bound elsewhere). */
  url?: string;
  port?: number;
  tunnel: TunnelState;
  tunnelUrl?: string;
  activeProvider: string;
  providerReady: boolean;
}

export interface Pairing {
  /** Exactly `{"url":…,"token":…}`: a secret. */
  payload: string;
  /** The relay's own phone web client with the token in the fragment: also a secret. */
  link: string;
  url: string;
  viaTunnel: boolean;
}

/** cloudflared could not be found: the user can install it or set its path. */
export class CloudflaredNotFound extends Error {}

export interface RemoteChatDeps {
  version: string;
  providers: SettingsProviderSource;
  keys: SecretKeySource;
  log: OutputLog;
  /** Where "Install cloudflared" puts the binary (the extension's global storage). */
  cloudflaredDir: string;
}

/**
 * The relay server and its tunnel, and their life cycles. No UI here: commands.ts asks the
 * user things and shows the outcome.
 */
export class RemoteChat extends Disposable {
  private relay: RelayServer | undefined;
  private tunnel: QuickTunnel | undefined;
  private starting: Promise<void> | undefined;
  private readonly changed = this.register(new vscode.EventEmitter<void>());
  private readonly tunnelDown = this.register(new vscode.EventEmitter<string>());
  private readonly tunnelProgress = this.register(new vscode.EventEmitter<string>());
  readonly onDidChange = this.changed.event;
  /** The tunnel went down after it was up (message for the user, already logged). */
  readonly onTunnelDown = this.tunnelDown.event;
  readonly onTunnelProgress = this.tunnelProgress.event;
  /** Test seam: how the tunnel's health probe reaches a stand-in edge. Production leaves it unset. */
  tunnelProbe: ProbeOptions | undefined;

  constructor(private readonly deps: RemoteChatDeps) {
    super();
    process.on('exit', stopAllTunnelsSync);
    this.register({ dispose: () => process.off('exit', stopAllTunnelsSync) });
  }

  status(): Status {
    const relay = this.relay?.running ? this.relay : undefined;
    return {
      running: !!relay,
      url: relay?.url,
      port: relay?.port,
      tunnel: this.tunnel?.state ?? 'stopped',
      tunnelUrl: this.tunnel?.state === 'up' ? this.tunnel.url : undefined,
      activeProvider: activeProviderId(),
      providerReady: this.deps.providers.active().ok,
    };
  }

  /** The pairing payload: the tunnel URL while the tunnel is up, else the relay's own URL. */
  pairing(): Pairing | undefined {
    const relay = this.relay;
    if (!relay?.running || !relay.url || !relay.token) return undefined;
    const tunnelUrl = this.tunnel?.state === 'up' ? this.tunnel.url : undefined;
    const url = tunnelUrl ?? relay.url;
    return { payload: pairingPayload(url, relay.token), link: webClientLink(url, relay.token), url, viaTunnel: !!tunnelUrl };
  }

  /** Starts the relay; a second call while it runs (or is starting) starts nothing new. */
  async start(): Promise<Status> {
    if (!this.relay?.running) {
      this.starting ??= this.startRelay().finally(() => {
        this.starting = undefined;
      });
      await this.starting;
    }
    return this.status();
  }

  private async startRelay(port?: number): Promise<void> {
    const s = relaySettings();
    const { log, providers, keys, version } = this.deps;
    const relay = new RelayServer({
      host: s.bindAddress,
      port: port ?? s.port,
      version,
      providers,
      keys,
      workspaces: () => vscode.workspace.workspaceFolders?.length ?? 0,
      maxConcurrentStreams: () => relaySettings().maxConcurrentStreams,
      logger: log,
      onRequestLog: (e) => log.request(e),
    });
    try {
      await relay.start();
      this.relay = relay;
    } finally {
      this.changed.fire();
    }
  }

  /** Stops the tunnel and the relay; live streams end with an error event, the token file goes. */
  async stop(): Promise<void> {
    await this.starting?.catch(() => {});
    const relay = this.relay;
    this.relay = undefined;
    try {
      // Side by side: deactivate has only a few seconds for both.
      await Promise.all([this.stopTunnel(), relay?.stop()]);
    } finally {
      this.changed.fire();
    }
  }

  /** A new token on the same port: the old token stops working at once; the tunnel (if any) stays. */
  async rotateToken(): Promise<Status> {
    const relay = this.relay;
    if (!relay?.running) return this.start();
    const port = relay.port;
    this.relay = undefined;
    await relay.stop();
    await this.startRelay(port);
    return this.status();
  }

  /** Stop and start with the current settings (port or bind address changed). */
  async restart(): Promise<Status> {
    const hadTunnel = this.tunnel !== undefined && this.tunnel.state !== 'stopped';
    await this.stop();
    await this.start();
    if (hadTunnel) await this.startTunnel();
    return this.status();
  }

  /** Finds the user's cloudflared (setting, CLOUDFLARED_BIN, PATH, then our install folder). */
  findCloudflared(): string {
    try {
      return findCloudflared({ explicitPath: relaySettings().cloudflaredPath || undefined, packageBinDir: this.deps.cloudflaredDir });
    } catch (err) {
      throw new CloudflaredNotFound((err as Error).message);
    }
  }

  /** Starts (or, when down, restarts) the quick tunnel to the relay; resolves with its public URL. */
  async startTunnel(): Promise<string> {
    const relay = this.relay;
    if (!relay?.running || relay.port === undefined) throw new Error('DeskRelay is not running: start Remote Chat first.');
    if (this.tunnel?.state === 'up' && this.tunnel.url) return this.tunnel.url;
    if (!this.tunnel) {
      const binary = this.findCloudflared();
      const host = relaySettings().bindAddress;
      const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
      const tunnel = new QuickTunnel({ binary, localUrl: `http://${local}:${relay.port}`, logger: this.deps.log, probe: this.tunnelProbe });
      tunnel.on('state', (state) => {
        this.deps.log.info(`tunnel ${state}${state === 'up' && tunnel.url ? ` at ${tunnel.url}` : ''}`);
        this.changed.fire();
      });
      tunnel.on('progress', (message) => this.tunnelProgress.fire(message));
      tunnel.on('down', (message) => this.tunnelDown.fire(message));
      this.tunnel = tunnel;
    }
    const tunnel = this.tunnel;
    try {
      return await tunnel.start();
    } catch (err) {
      // A tunnel that never came up is dropped: the next start finds cloudflared afresh.
      if (this.tunnel === tunnel) {
        this.tunnel = undefined;
        tunnel.removeAllListeners();
      }
      throw err;
    } finally {
      this.changed.fire();
    }
  }

  async stopTunnel(): Promise<void> {
    const tunnel = this.tunnel;
    if (!tunnel) return;
    this.tunnel = undefined;
    try {
      await tunnel.stop();
    } finally {
      tunnel.removeAllListeners();
      this.changed.fire();
    }
  }

  /** Everything off, for deactivate. */
  async shutdown(): Promise<void> {
    try {
      await this.stop();
    } finally {
      this.dispose();
    }
  }
}
