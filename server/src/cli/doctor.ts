/**
 * `deskrelay doctor`: one line per check, each saying what to do when it fails. Checks the
 * config file, every configured provider (key set, reachable and key accepted, model present),
 * cloudflared (found, version) and the modes of the token, devices and push key files. Exit code 1 when any check fails.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { describeProvider } from '../providers';
import { vapidPath } from '../doors/push/vapid';
import { listModels } from '../providers';
import type { KeySource, ProviderConfig } from '../providers/types';
import { configDir as defaultConfigDir, standaloneConfigPath, tokenPath } from '../session/paths';
import { devicesPath } from '../store/devices';
import { findCloudflared, TunnelError } from '../tunnel';
import { ConfigError, ConfigFile, defaultConfig, envKeySource, type StandaloneConfig } from './config';
import { detectDefaultRunner } from './detect';
import { silentLogger } from '../logger';
import { commandEnv } from '../agent/commandEnv';
import { McpServers } from '../agent/mcp/servers';

export type CheckState = 'ok' | 'warn' | 'fail';

export interface Check {
  state: CheckState;
  /** What was checked, e.g. `provider "local" model`. */
  what: string;
  /** The finding, and for warn/fail what to do. */
  text: string;
}

export interface DoctorOptions {
  /** --config; otherwise the default config.json in the config dir. */
  config?: string;
  /** --cloudflared. */
  cloudflared?: string;
  env?: NodeJS.ProcessEnv;
  /** Per provider request (default 5 s). */
  timeoutMs?: number;
}

const MARK: Record<CheckState, string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' };

export const formatCheck = (c: Check): string => `[${MARK[c.state]}] ${c.what}: ${c.text}`;

/** Kinds that cannot work without a key. */
const NEEDS_KEY = new Set<ProviderConfig['kind']>(['anthropic', 'gemini']);

export async function runDoctor(opts: DoctorOptions = {}): Promise<Check[]> {
  const env = opts.env ?? process.env;
  const dir = defaultConfigDir(env);
  const checks: Check[] = [];
  const add = (state: CheckState, what: string, text: string) => checks.push({ state, what, text });

  // The config file.
  const path = opts.config ?? standaloneConfigPath(dir);
  let config: StandaloneConfig | undefined;
  if (!existsSync(path)) {
    if (opts.config !== undefined) {
      add('fail', 'config file', `${path} does not exist; fix the --config path, or leave it out to use ${standaloneConfigPath(dir)}`);
    } else {
      const auto = await detectDefaultRunner(path, env);
      config = defaultConfig();
      if (auto.detected) config.providers = [auto.detected.config];
      add('ok', 'config file', `none at ${path}; ${auto.detected ? `deskrelay serve uses the ${auto.detected.runner.title} it found` : 'no local runner answered, so deskrelay serve uses the default Ollama'} (write the file to pin a provider)`);
    }
  } else {
    try {
      config = new ConfigFile(path, silentLogger, true).current();
      const ids = config.providers.map((p) => `"${p.id}"`).join(', ') || 'none';
      const active = config.providers.find((p) => p.id === config!.activeProvider);
      if (!active) {
        add('fail', 'config file', `${path} is valid but its "activeProvider" ${config.activeProvider ? `"${config.activeProvider}" is not among the providers (${ids})` : 'is not set'}; set "activeProvider" to one of ${ids}`);
      } else {
        add('ok', 'config file', `${path} is valid: ${config.providers.length} provider${config.providers.length === 1 ? '' : 's'} (${ids}), active "${active.id}"`);
      }
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      add('fail', 'config file', `${err.message}; fix it (deskrelay serve refuses to start with it)`);
    }
  }

  // Every provider.
  const keys = envKeySource(env);
  for (const p of config?.providers ?? []) await checkProvider(p, config!.activeProvider === p.id, keys, add, opts.timeoutMs ?? 5000);

  // MCP servers: each started, its tools listed, stopped again.
  await checkMcpServers(config, env, add);

  // cloudflared.
  checkCloudflared(opts.cloudflared, env, add);

  // The token file.
  const token = tokenPath(dir);
  if (!existsSync(token)) {
    add('ok', 'token file', `none at ${token} (deskrelay serve writes it, readable by you alone, while it runs)`);
  } else if (process.platform === 'win32') {
    add('ok', 'token file', `${token} exists (Windows: its folder's permissions protect it)`);
  } else {
    const mode = statSync(token).mode & 0o777;
    if (mode & 0o077) add('fail', 'token file', `${token} has mode ${mode.toString(8)}, readable by others; run: chmod 600 ${token}`);
    else add('ok', 'token file', `${token} has mode ${mode.toString(8)} (yours alone)`);
  }

  // Files that must be yours alone, said only when they exist: remembered devices ("rememberDevices",
  // token hashes) and the Web Push key pair (its private key signs every push the relay sends).
  for (const [what, path] of [
    ['devices file', devicesPath(dir)],
    ['push key file', vapidPath(dir)],
  ] as const) {
    if (!existsSync(path) || process.platform === 'win32') continue;
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) add('fail', what, `${path} has mode ${mode.toString(8)}, readable by others; run: chmod 600 ${path}`);
    else add('ok', what, `${path} has mode ${mode.toString(8)} (yours alone)`);
  }
  return checks;
}

async function checkProvider(p: ProviderConfig, active: boolean, keys: KeySource, add: (s: CheckState, what: string, text: string) => void, timeoutMs: number): Promise<void> {
  const name = `provider "${p.id}"`;
  const label = describeProvider(p);
  if (p.kind === 'cloud') {
    add('ok', name, 'the DeskRelay cloud provider: the phone uses it directly, nothing to check on this computer');
    return;
  }
  if (p.kind === 'vscode-lm') {
    add(active ? 'fail' : 'warn', name, `${label} work only in the DeskRelay VS Code extension; deskrelay serve answers its chats with an error${active ? '. Make another provider active ("activeProvider" in config.json)' : ''}`);
    return;
  }

  // The key.
  let key: string | undefined;
  if (p.apiKeyEnv || NEEDS_KEY.has(p.kind)) {
    key = await keys.get(p);
    if (key) add('ok', `${name} key`, `${p.apiKeyEnv} is set`);
    else if (p.apiKeyEnv) add('fail', `${name} key`, `the environment variable ${p.apiKeyEnv} is not set; ${keys.howToSet(p)}`);
    else add('fail', `${name} key`, `${label} needs an API key and none is named; ${keys.howToSet(p)}`);
    // Without its key such a provider cannot even list its models: nothing more to ask it.
    if (!key && NEEDS_KEY.has(p.kind)) return;
  }

  // Reachable, and the key accepted: one cheap request (the model list).
  let models: string[];
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    models = await listModels(p, { keys, idleTimeoutMs: timeoutMs }, controller.signal);
  } catch (err) {
    const why = controller.signal.aborted ? `${label} did not answer within ${timeoutMs / 1000} s; is it running?` : err instanceof Error ? err.message : String(err);
    add('fail', `${name} reachable`, why);
    return;
  } finally {
    clearTimeout(timer);
  }
  add('ok', `${name} reachable`, `${label} answered${key ? ' and accepted the key' : ''}; ${models.length} model${models.length === 1 ? '' : 's'} listed`);

  // The model.
  const shown = models.slice(0, 5).map((m) => `"${m}"`).join(', ') + (models.length > 5 ? ', …' : '');
  if (p.model === undefined || p.model === 'auto') {
    if (models.length) add('ok', `${name} model`, `"auto" picks "${models[0]}"`);
    else add('fail', `${name} model`, `${label} lists no models; ${p.kind === 'ollama' ? 'run "ollama pull <model>"' : 'load a model in it'}`);
    return;
  }
  const wanted = p.model.replace(/^models\//, '');
  if (models.includes(wanted) || (p.kind === 'ollama' && models.includes(`${wanted}:latest`))) add('ok', `${name} model`, `"${p.model}" is available`);
  else {
    const fix = p.kind === 'ollama' ? `run "ollama pull ${p.model}", or` : '';
    add('fail', `${name} model`, `"${p.model}" is not among the models ${label} lists (${shown || 'none'}); ${fix} set "model" in config.json to one of them`.replace(';  ', '; '));
  }
}

function checkCloudflared(explicit: string | undefined, env: NodeJS.ProcessEnv, add: (s: CheckState, what: string, text: string) => void): void {
  let program: string;
  try {
    program = findCloudflared({ explicitPath: explicit, env });
  } catch (err) {
    if (!(err instanceof TunnelError)) throw err;
    const chosen = explicit?.trim() || env.CLOUDFLARED_BIN?.trim();
    const first = err.message.split('\n')[0]!;
    // A path the user set that is wrong is a failure; none installed only matters for --tunnel.
    if (chosen) add('fail', 'cloudflared', first);
    else add('warn', 'cloudflared', `not found on PATH (needed only for --tunnel); install it (brew install cloudflared, winget install --id Cloudflare.cloudflared, or https://github.com/cloudflare/cloudflared/releases/latest) or pass --cloudflared PATH`);
    return;
  }
  const r = spawnSync(program, ['--version'], { encoding: 'utf8', timeout: 5000, env: { PATH: env.PATH ?? '' } });
  const text = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const version = /version\s+(\S+)/i.exec(text)?.[1];
  if (r.error || r.status !== 0 || !version) {
    const why = r.error ? ((r.error as NodeJS.ErrnoException).code ?? r.error.message) : r.status !== 0 ? `exit code ${r.status ?? r.signal}` : 'no version in its output';
    add('fail', 'cloudflared', `${program} did not answer --version (${why}); reinstall it or point --cloudflared at a working binary`);
    return;
  }
  add('ok', 'cloudflared', `${program}, version ${version}`);
}

/** Each MCP server of "mcpServers": started as `deskrelay serve` would, its tools counted, stopped. A failure is a warning: the relay runs without it. */
async function checkMcpServers(config: StandaloneConfig | undefined, env: NodeJS.ProcessEnv, add: (s: CheckState, what: string, text: string) => void): Promise<void> {
  const servers = config?.mcpServers;
  if (!servers) return;
  const keyNames = config.providers.flatMap((p) => (p.apiKeyEnv ? [p.apiKeyEnv] : []));
  const mcp = new McpServers(servers, { env: () => commandEnv(env, { keyNames, ...config.agent.env }), autoApprove: () => [], logger: silentLogger, version: 'doctor', startTimeoutMs: 10_000 });
  try {
    await mcp.start();
    for (const s of mcp.status()) {
      if (s.ok) add('ok', `MCP server "${s.name}"`, `started, ${s.tools} tool${s.tools === 1 ? '' : 's'}`);
      else add('warn', `MCP server "${s.name}"`, `${s.error ?? 'not working'}; the agent runs without its tools (fix its "mcpServers" entry)`);
    }
  } finally {
    await mcp.close();
  }
}
