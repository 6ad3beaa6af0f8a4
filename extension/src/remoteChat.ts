import * as vscode from 'vscode';
import { cloudflareQuickTunnel, RelaySession, TunnelError, type AdapterFactories, type Pairing, type ProbeOptions, type SessionStatus } from '../../server/src';
import { Disposable } from './dispose';
import type { OutputLog } from './log';
import type { SecretKeySource } from './secrets';
import { activeProviderId, relaySettings, type SettingsProviderSource } from './settings';

export type { Pairing } from '../../server/src';

export interface Status extends SessionStatus {
  activeProvider: string;
  providerReady: boolean;
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
  /** Adapters for kinds only the extension serves (`vscode-lm`). */
  adapters?: AdapterFactories;
}

/**
 * The VS Code face of the relay session the CLI runs too (server/src/session/relaySession.ts):
 * settings in, VS Code events out. No UI here: commands.ts asks the user things and shows the outcome.
 */
export class RemoteChat extends Disposable {
  private readonly session: RelaySession;
  private readonly changed = this.register(new vscode.EventEmitter<void>());
  private readonly tunnelDown = this.register(new vscode.EventEmitter<string>());
  private readonly tunnelProgress = this.register(new vscode.EventEmitter<string>());
  readonly onDidChange = this.changed.event;
  /** The tunnel went down after it was up (message for the user, already logged). */
  readonly onTunnelDown = this.tunnelDown.event;
  readonly onTunnelProgress = this.tunnelProgress.event;

  constructor(private readonly deps: RemoteChatDeps) {
    super();
    const { log, providers, keys, version, adapters } = deps;
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
          workspaces: () => vscode.workspace.workspaceFolders?.length ?? 0,
          maxConcurrentStreams: () => relaySettings().maxConcurrentStreams,
          logger: log,
          onRequestLog: (e) => log.request(e),
        };
      },
      tunnel: () => cloudflareQuickTunnel({ explicitPath: relaySettings().cloudflaredPath || undefined, packageBinDir: deps.cloudflaredDir }),
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
    return { ...this.session.status(), activeProvider: activeProviderId(), providerReady: this.deps.providers.active().ok };
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

  async rotateToken(): Promise<Status> {
    await this.session.rotateToken();
    return this.status();
  }

  async restart(): Promise<Status> {
    await this.notFoundAs(() => this.session.restart());
    return this.status();
  }

  /** Finds the user's cloudflared (setting, CLOUDFLARED_BIN, PATH, then our install folder). */
  findCloudflared(): string {
    return this.notFoundAs(() => this.session.locateTunnelAgent().program);
  }

  /** Starts (or, when down, restarts) the tunnel to the relay; resolves with its public URL. */
  startTunnel(): Promise<string> {
    return this.notFoundAs(() => this.session.startTunnel());
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

  /** A missing agent becomes CloudflaredNotFound, which commands.ts answers with "Install cloudflared". */
  private notFoundAs<T>(run: () => T): T {
    const mapped = (err: unknown): never => {
      if (err instanceof TunnelError && err.code === 'agent-missing') throw new CloudflaredNotFound(err.message);
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
