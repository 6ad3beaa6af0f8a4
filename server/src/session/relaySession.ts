import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { healthRoute } from '../doors/chat/health';
import type { RelayOptions } from './relay';
import { silentLogger, type Logger } from '../logger';
import { forwardUrl, stopAllTunnelsSync, type ProbeOptions, type Tunnel, type TunnelAgent, type TunnelKind, type TunnelState } from '../tunnel';
import { pairingPayload, webClientLink } from './pairing';
import { RelayServer } from './relay';

export interface RelaySessionOptions {
  /**
   * The relay's options, read at every start: a host whose settings change (the extension's port
   * or bind address) starts the next relay with the new ones.
   */
  relay: () => RelayOptions;
  /** The tunnel agent, read at every tunnel start (the kind, a path, a hostname or a token may have changed). */
  tunnel: () => TunnelAgent;
  logger?: Logger;
  /** Where the tunnel agent's environment is taken from (default process.env; only its allow-list reaches the agent). */
  tunnelEnv?: NodeJS.ProcessEnv;
}

export interface SessionStatus {
  running: boolean;
  /** The relay's own base URL (loopback, or the LAN address for a wildcard bind). */
  url?: string;
  port?: number;
  tunnel: TunnelState;
  /** Set while the tunnel is up. */
  tunnelUrl?: string;
  /** The running (or last tried) tunnel's kind, while there is one. */
  tunnelKind?: TunnelKind;
  /** True when that tunnel keeps its URL across restarts: the phone then only needs a new token. */
  lastingUrl?: boolean;
}

export interface Pairing {
  /** Exactly `{"url":…,"token":…}` (SPEC §2.5): a secret. */
  payload: string;
  /** The relay's own phone web client with the token in the fragment: also a secret. */
  link: string;
  url: string;
  viaTunnel: boolean;
}

export interface RelaySession {
  /** The relay started or stopped, or the tunnel's state changed: read status() again. */
  on(event: 'change', listener: () => void): this;
  on(event: 'tunnel-progress', listener: (message: string) => void): this;
  /** The tunnel went down after it was up (message for the user, already logged). */
  on(event: 'tunnel-down', listener: (message: string) => void): this;
  on(event: 'tunnel-state', listener: (state: TunnelState, url: string | undefined) => void): this;
  off(event: string, listener: (...args: never[]) => void): this;
}

/**
 * One DeskRelay session: the relay, its tunnel and the pairing, with their life cycles. Both
 * hosts run exactly this (the CLI's `deskrelay serve`, the extension's RemoteChat), so what the
 * tunnel forwards to, which hostnames the relay answers for and what the phone is paired with
 * cannot differ between them. No UI here: hosts print or show what it reports.
 *
 * - The tunnel always forwards to the relay on loopback (forwardUrl), whatever the bind.
 * - The relay answers the tunnel's hostname (Host allow-list) from the moment the agent announces
 *   it, before the probe, and on every relay restarted under a running tunnel.
 * - The pairing names the tunnel URL while the tunnel is up, else the relay's own URL.
 */
export class RelaySession extends EventEmitter {
  private relayServer: RelayServer | undefined;
  private tunnelRun: Tunnel | undefined;
  private starting: Promise<void> | undefined;
  /** The tunnel URL the relay answers for: set when the agent announces it, cleared when the tunnel goes. */
  private publicUrl: string | undefined;
  /** Test seam: how the tunnel's health probe reaches a stand-in edge. Production leaves it unset. */
  tunnelProbe: ProbeOptions | undefined;
  private readonly logger: Logger;
  private readonly exitHook = () => stopAllTunnelsSync();

  constructor(private readonly opts: RelaySessionOptions) {
    super();
    this.logger = opts.logger ?? silentLogger;
    // Whatever way the process exits, the agent goes with it (the watchdog covers a crash).
    process.on('exit', this.exitHook);
  }

  /** The running relay, if any. */
  get relay(): RelayServer | undefined {
    return this.relayServer?.running ? this.relayServer : undefined;
  }

  get tunnel(): Tunnel | undefined {
    return this.tunnelRun;
  }

  status(): SessionStatus {
    const relay = this.relay;
    const tunnel = this.tunnelRun;
    return {
      running: !!relay,
      url: relay?.url,
      port: relay?.port,
      tunnel: tunnel?.state ?? 'stopped',
      tunnelUrl: tunnel?.state === 'up' ? tunnel.url : undefined,
      tunnelKind: tunnel?.kind,
      lastingUrl: tunnel?.lastingUrl,
    };
  }

  /** The pairing: the tunnel URL while the tunnel is up, else the relay's own URL. */
  pairing(): Pairing | undefined {
    const relay = this.relay;
    if (!relay?.url || !relay.token) return undefined;
    const tunnelUrl = this.tunnelRun?.state === 'up' ? this.tunnelRun.url : undefined;
    const url = tunnelUrl ?? relay.url;
    return { payload: pairingPayload(url, relay.token), link: webClientLink(url, relay.token), url, viaTunnel: !!tunnelUrl };
  }

  /** Starts the relay; a second call while it runs (or is starting) starts nothing new. Rejects with RelayStartError. */
  async start(): Promise<SessionStatus> {
    if (!this.relay) {
      this.starting ??= this.startRelay().finally(() => {
        this.starting = undefined;
      });
      await this.starting;
    }
    return this.status();
  }

  /** Stops the tunnel and the relay; live streams end with an error event, the token file goes. */
  async stop(): Promise<void> {
    await this.starting?.catch(() => {});
    const relay = this.relayServer;
    this.relayServer = undefined;
    try {
      // Side by side: the extension's deactivate has only a few seconds for both.
      await Promise.all([this.stopTunnel(), relay?.stop()]);
    } finally {
      this.emit('change');
    }
  }

  /** A new token on the same port: the old token stops working at once; the tunnel (if any) stays and still reaches it. */
  async rotateToken(): Promise<SessionStatus> {
    const relay = this.relay;
    if (!relay) return this.start();
    const port = relay.port;
    this.relayServer = undefined;
    await relay.stop();
    await this.startRelay(port);
    return this.status();
  }

  /** Stop and start with the current options (port or bind address changed); a tunnel that was on comes back. */
  async restart(): Promise<SessionStatus> {
    const hadTunnel = this.tunnelRun !== undefined && this.tunnelRun.state !== 'stopped';
    await this.stop();
    await this.start();
    if (hadTunnel) await this.startTunnel();
    return this.status();
  }

  /**
   * Finds the tunnel agent's program without starting anything, so a host can offer to install
   * it first. Throws a TunnelError ('agent-missing') with install steps.
   */
  locateTunnelAgent(): { agent: TunnelAgent; program: string } {
    const agent = this.opts.tunnel();
    return { agent, program: agent.locate() };
  }

  /**
   * Starts the tunnel to the relay (or, when down, starts it again) and resolves with its public
   * URL once that URL answers the relay's health check. Rejects with a TunnelError.
   */
  async startTunnel(): Promise<string> {
    const relay = this.relay;
    const address = relay?.httpServer?.address() as AddressInfo | null | undefined;
    if (!relay || relay.port === undefined || !address) throw new Error('DeskRelay is not running: start Remote Chat first.');
    if (this.tunnelRun?.state === 'up' && this.tunnelRun.url) return this.tunnelRun.url;
    if (!this.tunnelRun) {
      const { agent, program } = this.locateTunnelAgent();
      const tunnel = agent.create(program, {
        localUrl: forwardUrl(address.address, relay.port),
        healthPath: healthRoute.path,
        logger: this.logger,
        env: this.opts.tunnelEnv,
        probe: this.tunnelProbe,
      });
      tunnel.on('url', (url) => {
        if (this.tunnelRun === tunnel) this.announce(url);
      });
      tunnel.on('state', (state) => {
        this.logger.info(`tunnel ${state}${state === 'up' && tunnel.url ? ` at ${tunnel.url}` : ''}`);
        this.emit('tunnel-state', state, tunnel.url);
        this.emit('change');
      });
      tunnel.on('progress', (message) => this.emit('tunnel-progress', message));
      tunnel.on('down', (message) => this.emit('tunnel-down', message));
      this.tunnelRun = tunnel;
    }
    const tunnel = this.tunnelRun;
    try {
      return await tunnel.start();
    } catch (err) {
      // A tunnel that never came up is dropped: the next start finds the agent afresh.
      if (this.tunnelRun === tunnel) {
        this.tunnelRun = undefined;
        this.announce(undefined);
        tunnel.removeAllListeners();
      }
      throw err;
    } finally {
      this.emit('change');
    }
  }

  async stopTunnel(): Promise<void> {
    const tunnel = this.tunnelRun;
    if (!tunnel) return;
    this.tunnelRun = undefined;
    try {
      await tunnel.stop();
    } finally {
      this.announce(undefined);
      tunnel.removeAllListeners();
      this.emit('change');
    }
  }

  /** Everything off and the exit hook removed (the extension's deactivate). */
  async dispose(): Promise<void> {
    try {
      await this.stop();
    } finally {
      process.off('exit', this.exitHook);
      this.removeAllListeners();
    }
  }

  private async startRelay(port?: number): Promise<void> {
    const options = this.opts.relay();
    const relay = new RelayServer(port === undefined ? options : { ...options, port });
    // A relay restarted under a running tunnel (a new token) must still answer the tunnel's Host.
    if (this.publicUrl) relay.setPublicHosts([this.publicUrl]);
    try {
      await relay.start();
      this.relayServer = relay;
    } finally {
      this.emit('change');
    }
  }

  private announce(url: string | undefined): void {
    this.publicUrl = url;
    this.relayServer?.setPublicHosts(url ? [url] : []);
  }
}

