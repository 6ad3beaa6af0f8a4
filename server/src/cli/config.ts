import { chmodSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { parseAcpAgents, type AcpAgentConfig } from '../agent/acp/agents';
import { McpConfigError, parseMcpServers, type McpServerConfig } from '../agent/mcp/config';
import { tunnelKindInfo } from '../tunnel/agents';
import { isTunnelKind, TUNNEL_KINDS, type TunnelKind } from '../tunnel/tunnel';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../logger';
import type { AgentApprovals } from '../agent/host';
import { validateProviderConfig } from '../providers';
import type { ActiveProvider, KeySource, ProviderConfig, ProviderSource, TranscriptionChoice } from '../providers/types';

/** The standalone CLI's config file (CONTRACT §6). */
export interface StandaloneConfig {
  activeProvider: string;
  workspaces: number;
  maxConcurrentStreams: number;
  /** Client connections held at once (512): past it new ones are closed. Read at start. */
  maxConnections: number;
  providers: ProviderConfig[];
  /** The phone may switch the active provider (`PUT /v1/providers/active`); default false. */
  allowPhoneProviderSwitch: boolean;
  /** Web Push to the phone when a resumable reply is ready (issue 15); default true. */
  pushNotifications: boolean;
  /** Who transcribes the phone's recordings (issue 29): an OpenAI-compatible provider's id and its model; absent: none. */
  transcription?: TranscriptionChoice;
  /** Keep paired devices across restarts, as salted hashes and public keys in devices.json (issues 26, 36); default true. Read at start. */
  rememberDevices: boolean;
  /** Keep conversations on the desktop, in the config dir's conversations folder (issue 30); default false. Read on every request. */
  keepConversations: boolean;
  /**
   * The workspace agent (issue 23): folders it may work in (none: off) and extra globs it may
   * never touch, read at start; `approvals`: who may decide (issue 36); `env`: variable names its
   * commands keep anyway and lose besides (issue 35), read at every command.
   */
  agent: { folders: string[]; denyPaths: string[]; approvals: AgentApprovals; env?: AgentEnvNames; autoApproveTools?: string[] };
  /** MCP servers whose tools the CLI's agent offers (issue 40), in the shape other MCP clients read. Read at start. */
  mcpServers?: Record<string, McpServerConfig>;
  /** ACP agents beside the built-in ones (issue 39): `{"<id>": {"name","command","args"?,"env"?}}`. Read on every request. */
  agents?: Record<string, AcpAgentConfig>;
  /** The tunnel `deskrelay serve` starts without --tunnel, and its public hostname (--tunnel and --hostname win). Read at start. */
  tunnel?: { kind: TunnelKind; hostname?: string };
}

export interface AgentEnvNames {
  pass: string[];
  drop: string[];
}

export const DEFAULT_MAX_STREAMS = 8;
export const DEFAULT_MAX_CONNECTIONS = 512;

/** With no config file: one Ollama on its default address, first model it lists. */
export function defaultConfig(): StandaloneConfig {
  return {
    activeProvider: 'local',
    workspaces: 0,
    maxConcurrentStreams: DEFAULT_MAX_STREAMS,
    maxConnections: DEFAULT_MAX_CONNECTIONS,
    providers: [{ id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:11434', model: 'auto' }],
    allowPhoneProviderSwitch: false,
    pushNotifications: true,
    rememberDevices: true,
    keepConversations: false,
    agent: { folders: [], denyPaths: [], approvals: 'device' },
  };
}

export class ConfigError extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses and checks a config file's text; messages name the first bad field. */
export function parseConfig(text: string): StandaloneConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`it is not valid JSON (${(err as Error).message})`);
  }
  if (!isObject(raw)) throw new ConfigError('it must be a JSON object');
  const defaults = defaultConfig();
  const providersRaw = raw.providers ?? defaults.providers;
  if (!Array.isArray(providersRaw)) throw new ConfigError('"providers" must be an array');
  let providers: ProviderConfig[];
  try {
    providers = providersRaw.map((p, i) => validateProviderConfig(p, `providers[${i}]`));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const ids = new Set<string>();
  for (const p of providers) {
    if (ids.has(p.id)) throw new ConfigError(`two providers share the id "${p.id}"`);
    ids.add(p.id);
  }
  // A file that lists its providers but names none active means "no active provider": the
  // relay answers 412 rather than guess. A file without "providers" keeps the built-in one.
  const activeProvider = raw.activeProvider ?? (raw.providers === undefined ? defaults.activeProvider : '');
  if (typeof activeProvider !== 'string') throw new ConfigError('"activeProvider" must be a string naming a provider id');
  const workspaces = raw.workspaces ?? 0;
  if (typeof workspaces !== 'number' || !Number.isInteger(workspaces) || workspaces < 0) {
    throw new ConfigError('"workspaces" must be a whole number of 0 or more');
  }
  const maxConcurrentStreams = raw.maxConcurrentStreams ?? DEFAULT_MAX_STREAMS;
  if (typeof maxConcurrentStreams !== 'number' || !Number.isInteger(maxConcurrentStreams) || maxConcurrentStreams < 1) {
    throw new ConfigError('"maxConcurrentStreams" must be a whole number of 1 or more');
  }
  const maxConnections = raw.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  if (typeof maxConnections !== 'number' || !Number.isInteger(maxConnections) || maxConnections < 1) {
    throw new ConfigError('"maxConnections" must be a whole number of 1 or more');
  }
  const allowPhoneProviderSwitch = raw.allowPhoneProviderSwitch ?? false;
  if (typeof allowPhoneProviderSwitch !== 'boolean') throw new ConfigError('"allowPhoneProviderSwitch" must be true or false');
  const pushNotifications = raw.pushNotifications ?? true;
  if (typeof pushNotifications !== 'boolean') throw new ConfigError('"pushNotifications" must be true or false');
  const rememberDevices = raw.rememberDevices ?? true;
  if (typeof rememberDevices !== 'boolean') throw new ConfigError('"rememberDevices" must be true or false');
  const keepConversations = raw.keepConversations ?? false;
  if (typeof keepConversations !== 'boolean') throw new ConfigError('"keepConversations" must be true or false');
  const agent = parseAgent(raw.agent);
  let agents: Record<string, AcpAgentConfig>;
  try {
    agents = parseAcpAgents(raw.agents);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  let mcpServers: Record<string, McpServerConfig>;
  try {
    mcpServers = parseMcpServers(raw.mcpServers);
  } catch (err) {
    if (err instanceof McpConfigError) throw new ConfigError(err.message);
    throw err;
  }
  const transcription = parseTranscription(raw.transcription, providers);
  const tunnel = parseTunnel(raw.tunnel);
  return {
    activeProvider,
    workspaces,
    maxConcurrentStreams,
    maxConnections,
    providers,
    allowPhoneProviderSwitch,
    pushNotifications,
    rememberDevices,
    keepConversations,
    agent,
    ...(Object.keys(agents).length > 0 ? { agents } : {}),
    ...(Object.keys(mcpServers).length > 0 ? { mcpServers } : {}),
    ...(transcription ? { transcription } : {}),
    ...(tunnel ? { tunnel } : {}),
  };
}

/** `"tunnel": {"kind": "cloudflare-named", "hostname": "relay.example.com"}`; its secret still comes from the environment only. */
function parseTunnel(raw: unknown): StandaloneConfig['tunnel'] {
  if (raw === undefined || raw === null) return undefined;
  const shape = `{"kind": one of ${TUNNEL_KINDS.join(', ')}, "hostname"?: "relay.example.com"}`;
  if (!isObject(raw) || !isTunnelKind(raw.kind)) throw new ConfigError(`"tunnel" must be ${shape}`);
  if (raw.hostname !== undefined && (typeof raw.hostname !== 'string' || raw.hostname.trim() === '')) throw new ConfigError('"tunnel.hostname" must be a non-empty string (the public hostname)');
  if (raw.hostname === undefined && tunnelKindInfo(raw.kind).needsHostname) throw new ConfigError(`"tunnel" of kind ${raw.kind} needs "hostname" (its public hostname)`);
  return { kind: raw.kind, ...(raw.hostname === undefined ? {} : { hostname: raw.hostname.trim() }) };
}

function parseAgent(raw: unknown): StandaloneConfig['agent'] {
  if (raw === undefined) return { folders: [], denyPaths: [], approvals: 'device' };
  if (!isObject(raw)) throw new ConfigError('"agent" must be an object: {"folders": ["/path/to/project"], "denyPaths": ["*.sqlite"]}');
  const strings = (value: unknown, name: string): string[] => {
    if (value === undefined) return [];
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.trim() === '')) throw new ConfigError(`"agent.${name}" must be an array of non-empty strings`);
    return value as string[];
  };
  const approvals = raw.approvals ?? 'device';
  if (approvals !== 'device' && approvals !== 'token') throw new ConfigError('"agent.approvals" must be "device" (only phones allowed at the desk, signed decisions) or "token" (any token, unsigned decisions)');
  const agent: StandaloneConfig['agent'] = { folders: strings(raw.folders, 'folders'), denyPaths: strings(raw.denyPaths, 'denyPaths'), approvals };
  if (raw.env !== undefined) agent.env = parseAgentEnv(raw.env);
  if (raw.autoApproveTools !== undefined) agent.autoApproveTools = strings(raw.autoApproveTools, 'autoApproveTools');
  return agent;
}

function parseAgentEnv(raw: unknown): AgentEnvNames {
  if (!isObject(raw)) throw new ConfigError('"agent.env" must be an object: {"pass": ["NAME"], "drop": ["NAME"]}');
  const unknown = Object.keys(raw).find((k) => k !== 'pass' && k !== 'drop');
  if (unknown !== undefined) throw new ConfigError(`"agent.env" has an unknown field ${JSON.stringify(unknown)}; it takes "pass" and "drop"`);
  const names = (value: unknown, field: string): string[] => {
    if (value === undefined) return [];
    const shape = `"agent.env.${field}" must be an array of variable names (no "=", not empty)`;
    if (!Array.isArray(value)) throw new ConfigError(shape);
    for (const v of value) if (typeof v !== 'string' || !/^[^=\0]+$/.test(v)) throw new ConfigError(`${shape}: ${JSON.stringify(v)} is not one`);
    return value as string[];
  };
  return { pass: names(raw.pass, 'pass'), drop: names(raw.drop, 'drop') };
}

/**
 * `"transcription": {"provider": "<id>", "model": "<model>"}`. The provider must be listed and
 * OpenAI-compatible: a file naming another one is a mistake best reported when it is loaded.
 */
function parseTranscription(value: unknown, providers: readonly ProviderConfig[]): TranscriptionChoice | undefined {
  if (value === undefined || value === null) return undefined;
  const shape = '"transcription" must be {"provider": "<id of an openai-compatible provider>", "model": "<model>"}';
  if (!isObject(value)) throw new ConfigError(shape);
  const { provider, model } = value;
  if (typeof provider !== 'string' || provider === '' || typeof model !== 'string' || model.trim() === '') throw new ConfigError(shape);
  const record = providers.find((p) => p.id === provider);
  if (!record) throw new ConfigError(`"transcription" names provider "${provider}", which is not among the providers`);
  if (record.kind !== 'openai-compatible') throw new ConfigError(`"transcription" names provider "${provider}" of kind ${record.kind}; only an openai-compatible provider transcribes`);
  return { provider, model: model.trim() };
}

/** Which provider a config makes active, in the ProviderSource's terms. */
export function activeOf(config: StandaloneConfig): ActiveProvider {
  const record = config.providers.find((p) => p.id === config.activeProvider);
  if (!record) return { ok: false, reason: config.activeProvider ? 'missing' : 'none', id: config.activeProvider };
  if (record.kind === 'cloud') return { ok: false, reason: 'cloud', id: record.id };
  return { ok: true, config: record };
}

/**
 * What `deskrelay serve` says at start when no usable provider is active: why, and how to pick
 * one (the relay re-reads the file, so no restart is needed).
 */
export function noProviderNotice(config: StandaloneConfig, path: string): string {
  const usable = config.providers.filter((p) => p.kind !== 'cloud').map((p) => `"${p.id}"`);
  const pick = usable.length
    ? `set "activeProvider" in ${path} to one of ${usable.join(', ')}`
    : `add a provider to "providers" in ${path} and name it in "activeProvider"`;
  const active = activeOf(config);
  const why =
    active.ok
      ? ''
      : active.reason === 'none'
        ? `${path} names no "activeProvider"`
        : active.reason === 'missing'
          ? `"activeProvider" is "${active.id}", which is not among the providers`
          : `"activeProvider" is "${active.id}", the cloud provider, which the phone uses directly`;
  return `No provider is active: ${why}. Chats get 412 chat.no_provider until you ${pick}; the relay picks the change up without a restart.`;
}

type Stamp = string;
const stampOf = (path: string): Stamp | undefined => {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return undefined;
  }
};

/**
 * The config file, re-read whenever it changes. It compares the file's identity on each use
 * rather than watching, so an editor that saves by renaming a new file over the old one is
 * seen too, and nothing is left running. An edit that breaks the file is ignored with a
 * warning; the last good config stays in force.
 */
export class ConfigFile implements ProviderSource {
  private config: StandaloneConfig;
  private stamp: Stamp | undefined;
  private warnedStamp: Stamp | undefined;
  /** The file was looked at in this turn of the event loop. */
  private checked = false;
  private readonly recheck = () => {
    this.checked = false;
  };

  /** Throws ConfigError when the file is required and missing, or present and invalid. */
  constructor(
    readonly path: string,
    private readonly logger: Logger,
    required: boolean,
  ) {
    this.stamp = stampOf(path);
    if (this.stamp === undefined) {
      if (required) throw new ConfigError(`config file ${path} does not exist`);
      this.config = defaultConfig();
      return;
    }
    this.config = this.read();
  }

  private read(): StandaloneConfig {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      throw new ConfigError(`config file ${this.path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    try {
      return parseConfig(text);
    } catch (err) {
      throw new ConfigError(`config file ${this.path} is invalid: ${(err as Error).message}`);
    }
  }

  current(): StandaloneConfig {
    // One look at the file per turn of the event loop: a request asked two or three times (the
    // provider, the stream limit), and the streams that arrive together one stat each
    // (bench/NOTES.md, issue 28). An edit is seen by the next request as before.
    if (this.checked) return this.config;
    this.checked = true;
    setImmediate(this.recheck);
    const stamp = stampOf(this.path);
    if (stamp !== this.stamp && stamp !== this.warnedStamp) {
      if (stamp === undefined) {
        // Mid-save (the old file renamed away, the new one not yet in place): keep what we have.
        return this.config;
      }
      try {
        this.config = this.read();
        this.stamp = stamp;
        this.logger.info(`config reloaded: active provider "${this.config.activeProvider}"`);
      } catch (err) {
        this.warnedStamp = stamp;
        this.logger.warn(`${(err as Error).message}; keeping the last good config`);
      }
    }
    return this.config;
  }

  active(): ActiveProvider {
    return activeOf(this.current());
  }

  list(): ProviderConfig[] {
    return this.current().providers;
  }

  activeId(): string {
    return this.current().activeProvider;
  }

  transcription(): TranscriptionChoice | undefined {
    return this.current().transcription;
  }

  /** Only with a config file that says `"allowPhoneProviderSwitch": true` (the built-in default never allows it). */
  canSwitch(): boolean {
    return this.stamp !== undefined && this.current().allowPhoneProviderSwitch;
  }

  /**
   * Writes `activeProvider` (and the provider's `model`) into the config file, as editing it by
   * hand would: every other field is kept as it is, the indentation too, and the file is
   * replaced atomically (temp file + rename, same mode) so a reader never sees half of it.
   */
  async switchTo(id: string, model?: string): Promise<void> {
    const text = readFileSync(this.path, 'utf8');
    const raw = JSON.parse(text) as Record<string, unknown>;
    raw.activeProvider = id;
    if (model !== undefined && Array.isArray(raw.providers)) {
      const record = raw.providers.find((p: unknown) => typeof p === 'object' && p !== null && (p as { id?: unknown }).id === id) as Record<string, unknown> | undefined;
      if (record) record.model = model;
    }
    const indent = /^[ \t]+(?=")/m.exec(text)?.[0] ?? '  ';
    const next = `${JSON.stringify(raw, null, indent)}\n`;
    parseConfig(next); // what is written must load
    const temp = `${this.path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      writeFileSync(temp, next, { mode: statSync(this.path).mode & 0o777 });
      chmodSync(temp, statSync(this.path).mode & 0o777);
      renameSync(temp, this.path);
    } catch (err) {
      rmSync(temp, { force: true });
      throw err;
    }
    // Read back at once, so the next request (and this answer) see the switch.
    this.checked = false;
    this.current();
  }
}

/** The CLI's keys: from the environment variable a provider names in apiKeyEnv. */
export function envKeySource(env: NodeJS.ProcessEnv = process.env): KeySource {
  return {
    async get(provider) {
      return provider.apiKeyEnv ? env[provider.apiKeyEnv] || undefined : undefined;
    },
    howToSet(provider) {
      return provider.apiKeyEnv
        ? `set the environment variable ${provider.apiKeyEnv} before starting deskrelay serve`
        : `add "apiKeyEnv": "<VARIABLE>" to provider "${provider.id}" in config.json and set that environment variable`;
    },
  };
}
