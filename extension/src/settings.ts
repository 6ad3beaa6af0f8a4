import * as vscode from 'vscode';
import { isTunnelKind, validateProviderConfig, type ActiveProvider, type Logger, type ProviderConfig, type ProviderSource, type TranscriptionChoice, type TunnelKind } from '../../server/src';

export const SECTION = 'deskrelay';

export interface RelaySettings {
  port: number;
  bindAddress: string;
  autoStart: boolean;
  maxConcurrentStreams: number;
  cloudflaredPath: string;
}

/** The tunnel settings (`deskrelay.tunnel.*` and the agents' paths). Tokens are never settings: secrets.ts. */
export interface TunnelSettingValues {
  kind: TunnelKind;
  /** cloudflare-named: the public hostname (required). ngrok: the user's own domain (optional). */
  hostname: string;
  cloudflaredPath: string;
  tailscalePath: string;
  ngrokPath: string;
}

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

export function relaySettings(): RelaySettings {
  const c = config();
  return {
    port: c.get<number>('port', 53210),
    bindAddress: c.get<string>('bindAddress', '127.0.0.1').trim() || '127.0.0.1',
    autoStart: c.get<boolean>('autoStart', false),
    maxConcurrentStreams: Math.max(1, Math.floor(c.get<number>('maxConcurrentStreams', 8))),
    cloudflaredPath: c.get<string>('cloudflaredPath', '').trim(),
  };
}

export function tunnelSettings(): TunnelSettingValues {
  const c = config();
  const kind = c.get<string>('tunnel.kind', 'cloudflare-quick');
  return {
    kind: isTunnelKind(kind) ? kind : 'cloudflare-quick',
    hostname: c.get<string>('tunnel.hostname', '').trim(),
    cloudflaredPath: c.get<string>('cloudflaredPath', '').trim(),
    tailscalePath: c.get<string>('tailscalePath', '').trim(),
    ngrokPath: c.get<string>('ngrokPath', '').trim(),
  };
}

export interface ProviderEntry {
  id: string;
  /** The checked record, or why the setting's entry is unusable. */
  config?: ProviderConfig;
  problem?: string;
}

/** Every entry of `deskrelay.providers`, checked like the standalone config (keys are not allowed here). */
export function providerEntries(): ProviderEntry[] {
  const raw = config().get<unknown[]>('providers', []);
  if (!Array.isArray(raw)) return [];
  return raw.map((item, i) => {
    const where = `deskrelay.providers[${i}]`;
    const id = typeof item === 'object' && item !== null && typeof (item as { id?: unknown }).id === 'string' ? (item as { id: string }).id : `#${i}`;
    try {
      // In the editor keys live in SecretStorage only: apiKeyEnv has no meaning here.
      const { apiKeyEnv: _ignored, ...checked } = validateProviderConfig(item, where);
      return { id, config: checked };
    } catch (err) {
      let problem = (err as Error).message;
      // The standalone config's advice (apiKeyEnv) does not apply in the editor.
      if (/must not hold an API key/.test(problem)) problem = `${where} must not hold an API key; set keys with "DeskRelay: Set Provider API Key"`;
      return { id, problem };
    }
  });
}

export function activeProviderId(): string {
  return config().get<string>('activeProvider', 'local');
}

/**
 * Writes `deskrelay.activeProvider` to user settings. It has machine scope: which provider answers
 * the phone is the desk's choice, so a workspace's settings neither pick it nor receive a switch.
 */
export async function setActiveProviderId(id: string): Promise<void> {
  await config().update('activeProvider', id, vscode.ConfigurationTarget.Global);
}

/** `deskrelay.allowPhoneProviderSwitch`: machine scope, so only the user (never a workspace) turns it on. */
export function phoneMaySwitch(): boolean {
  return config().get<boolean>('allowPhoneProviderSwitch', false) === true;
}

/**
 * `deskrelay.transcription` (machine scope): who transcribes the phone's recordings. The relay
 * checks that the provider exists and is openai-compatible (412 otherwise), as it does per request.
 */
export function transcriptionChoice(): TranscriptionChoice | undefined {
  const raw = config().get<unknown>('transcription', null);
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { provider, model } = raw as Record<string, unknown>;
  if (typeof provider !== 'string' || !provider || typeof model !== 'string' || !model.trim()) return undefined;
  return { provider, model: model.trim() };
}

/** Writes `deskrelay.transcription` to user settings. */
export async function setTranscriptionChoice(choice: TranscriptionChoice): Promise<void> {
  await config().update('transcription', choice, vscode.ConfigurationTarget.Global);
}

/** `deskrelay.rememberDevices`: paired devices outlive the relay (issues 26, 36; default on, machine scope). */
export function rememberDevicesOn(): boolean {
  return config().get<boolean>('rememberDevices', true) !== false;
}

/**
 * `deskrelay.agent.approvals`: who may drive the agent (issue 36). Only the user's own value
 * counts, and only "token" changes anything: a workspace's settings can never open the agent to
 * every token.
 */
export function agentApprovals(): 'device' | 'token' {
  return config().inspect<string>('agent.approvals')?.globalValue === 'token' ? 'token' : 'device';
}

/** `deskrelay.keepConversations`: conversations kept on the desktop (issue 30; default off, machine scope); read on every request. */
export function keepConversationsOn(): boolean {
  return config().get<boolean>('keepConversations', false) === true;
}

/** `deskrelay.pushNotifications`: Web Push to the phone when a resumable reply is ready (default on). */
export function pushNotificationsOn(): boolean {
  return config().get<boolean>('pushNotifications', true) !== false;
}

/**
 * Sets the `model` of provider `id` in `deskrelay.providers` (machine scope: user settings); every
 * other entry and field stays as the user wrote it.
 */
export async function setProviderModel(id: string, model: string): Promise<void> {
  const raw = config().get<unknown[]>('providers', []);
  if (!Array.isArray(raw)) return;
  const next = raw.map((item) =>
    typeof item === 'object' && item !== null && (item as { id?: unknown }).id === id ? { ...(item as Record<string, unknown>), model } : item,
  );
  await config().update('providers', next, vscode.ConfigurationTarget.Global);
}

/**
 * The relay asks this on every request, so a settings change reaches the next message
 * without a restart. Problems with an entry are logged once per distinct message.
 */
export class SettingsProviderSource implements ProviderSource {
  private readonly reported = new Set<string>();

  constructor(private readonly logger: Logger) {}

  active(): ActiveProvider {
    const id = activeProviderId();
    if (!id) return { ok: false, reason: 'none' };
    const entry = providerEntries().find((e) => e.id === id);
    if (!entry) return { ok: false, reason: 'missing', id };
    if (!entry.config) {
      if (!this.reported.has(entry.problem!)) {
        this.reported.add(entry.problem!);
        this.logger.warn(`provider "${id}" is ignored: ${entry.problem}`);
      }
      return { ok: false, reason: 'missing', id };
    }
    if (entry.config.kind === 'cloud') return { ok: false, reason: 'cloud', id };
    return { ok: true, config: entry.config };
  }

  list(): ProviderConfig[] {
    return providerEntries().flatMap((e) => (e.config ? [e.config] : []));
  }

  activeId(): string {
    return activeProviderId();
  }

  canSwitch(): boolean {
    return phoneMaySwitch();
  }

  transcription(): TranscriptionChoice | undefined {
    return transcriptionChoice();
  }

  /** A switch from the phone: the same settings DeskRelay: Select Provider writes (the status bar follows them). */
  async switchTo(id: string, model?: string): Promise<void> {
    if (model !== undefined) await setProviderModel(id, model);
    await setActiveProviderId(id);
  }
}

export function affectsRelayAddress(e: vscode.ConfigurationChangeEvent): boolean {
  return e.affectsConfiguration(`${SECTION}.port`) || e.affectsConfiguration(`${SECTION}.bindAddress`);
}
