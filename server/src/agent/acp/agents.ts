import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { client, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';
import type { AgentInfo } from '../../protocol';
import type { AcpAgentSpec } from './engine';
import { CLIENT_CAPABILITIES } from './engine';
import { AgentProcess, redactTokens } from './process';

/** An ACP agent named in the desk's config (CLI `"agents"`, VS Code `deskrelay.agent.acpAgents`). */
export interface AcpAgentConfig {
  name: string;
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

/** DeskRelay's own agent: always there, whatever model the desk chose. */
export const OWN_AGENT: AgentInfo = { id: 'deskrelay', name: 'DeskRelay (any model)', available: true };

/** The ACP agents DeskRelay looks for on PATH, with how to install each. */
export const BUILT_IN_AGENTS: readonly (AcpAgentSpec & { install: string })[] = [
  { id: 'claude', name: 'Claude Code', command: 'claude-code-acp', args: [], env: {}, install: 'npm install -g @zed-industries/claude-code-acp (Claude Code through ACP), then log in with `claude` or set ANTHROPIC_API_KEY in its "env"' },
  { id: 'codex', name: 'Codex', command: 'codex-acp', args: [], env: {}, install: 'npm install -g @zed-industries/codex-acp, then log in with `codex`' },
  { id: 'gemini', name: 'Gemini CLI', command: 'gemini', args: ['--acp'], env: {}, install: 'npm install -g @google/gemini-cli, then run `gemini` once to log in (older versions take --experimental-acp: name it in "agents")' },
  { id: 'opencode', name: 'opencode', command: 'opencode', args: ['acp'], env: {}, install: 'npm install -g opencode-ai, then `opencode auth login`' },
  { id: 'qwen', name: 'Qwen Code', command: 'qwen', args: ['--acp'], env: {}, install: 'npm install -g @qwen-code/qwen-code, then run `qwen` once to log in' },
];

const ID = /^[a-z0-9][a-z0-9._-]{0,39}$/;
/** How long a probe's answer is kept: an install or a login at the desk shows within this. */
const PROBE_TTL_MS = 60_000;
/** How long a probe waits for `initialize`. */
const PROBE_TIMEOUT_MS = 20_000;

/** The config's `"agents"` checked: `{"<id>": {"name","command","args"?,"env"?}}`; an Error saying what is wrong. */
export function parseAcpAgents(raw: unknown): Record<string, AcpAgentConfig> {
  const shape = '{"<id>": {"name": "…", "command": "…", "args"?: ["…"], "env"?: {"NAME": "value"}}}';
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`"agents" must be an object: ${shape}`);
  const out: Record<string, AcpAgentConfig> = {};
  for (const [id, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!ID.test(id) || id === OWN_AGENT.id) throw new Error(`"agents": "${id}" is not an agent id (lower-case letters, digits, ".", "_", "-"; not "deskrelay")`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`"agents.${id}" must be an object: ${shape}`);
    const v = value as Record<string, unknown>;
    for (const key of Object.keys(v)) if (!['name', 'command', 'args', 'env'].includes(key)) throw new Error(`"agents.${id}.${key}" is not a setting: ${shape}`);
    if (typeof v.name !== 'string' || v.name.trim() === '') throw new Error(`"agents.${id}.name" must be a non-empty string`);
    if (typeof v.command !== 'string' || v.command.trim() === '') throw new Error(`"agents.${id}.command" must be a non-empty string (the program, without its arguments)`);
    if (v.args !== undefined && (!Array.isArray(v.args) || v.args.some((a) => typeof a !== 'string'))) throw new Error(`"agents.${id}.args" must be an array of strings`);
    if (v.env !== undefined && (typeof v.env !== 'object' || v.env === null || Array.isArray(v.env) || Object.values(v.env).some((e) => typeof e !== 'string'))) throw new Error(`"agents.${id}.env" must be an object of strings`);
    out[id] = { name: v.name, command: v.command, ...(v.args ? { args: v.args as string[] } : {}), ...(v.env ? { env: v.env as Record<string, string> } : {}) };
  }
  return out;
}

/** The program's path when `command` is on PATH (or a path to an executable), else undefined. */
export function findOnPath(command: string, env: NodeJS.ProcessEnv): string | undefined {
  const executable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (isAbsolute(command) || command.includes('/')) return executable(command) ? command : undefined;
  const exts = process.platform === 'win32' ? ['', ...(env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';')] : [''];
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    for (const ext of exts) if (executable(join(dir, command + ext))) return join(dir, command + ext);
  }
  return undefined;
}

export interface AgentCatalogOptions {
  /** The desk's configured agents, asked afresh each time. */
  configured(): Readonly<Record<string, AcpAgentConfig>>;
  /** The environment an agent starts from (scrubbed: commandEnv). */
  env(): NodeJS.ProcessEnv;
}

/**
 * The agents a session may run: DeskRelay's own, the built-in ACP agents found on PATH, the
 * configured ones. An ACP agent is available once it started and answered `initialize`; that
 * probe runs when the list is asked for and is kept a minute.
 */
export class AgentCatalog {
  private readonly probes = new Map<string, { key: string; at: number; result: Promise<AgentInfo> }>();

  constructor(private readonly options: AgentCatalogOptions) {}

  /** Every ACP agent's spec by id, configured ones over built-in ones of the same id. */
  specs(): Map<string, AcpAgentSpec & { install?: string }> {
    const out = new Map<string, AcpAgentSpec & { install?: string }>();
    for (const b of BUILT_IN_AGENTS) out.set(b.id, b);
    for (const [id, c] of Object.entries(this.options.configured())) out.set(id, { id, name: c.name, command: c.command, args: c.args ?? [], env: c.env ?? {} });
    return out;
  }

  async list(cwd: string | undefined): Promise<AgentInfo[]> {
    return [OWN_AGENT, ...(await Promise.all([...this.specs().values()].map((s) => this.check(s, cwd))))];
  }

  /** One agent's availability (probed at most once a minute). */
  check(spec: AcpAgentSpec & { install?: string }, cwd: string | undefined): Promise<AgentInfo> {
    const key = JSON.stringify([spec.command, spec.args, spec.env, cwd]);
    const kept = this.probes.get(spec.id);
    if (kept && kept.key === key && Date.now() - kept.at < PROBE_TTL_MS) return kept.result;
    const result = this.probe(spec, cwd);
    this.probes.set(spec.id, { key, at: Date.now(), result });
    return result;
  }

  private async probe(spec: AcpAgentSpec & { install?: string }, cwd: string | undefined): Promise<AgentInfo> {
    const base = { id: spec.id, name: spec.name };
    const env = this.options.env();
    if (!findOnPath(spec.command, { ...env, ...spec.env })) {
      return { ...base, available: false, reason: `${spec.command} is not on the desktop's PATH.${spec.install ? ` Install it at the desk: ${spec.install}.` : ' Check "command" in the desk\'s agent settings.'}` };
    }
    if (cwd === undefined) return { ...base, available: false, reason: 'The desk\'s folders are not on disk here; ACP agents need one.' };
    const proc = new AgentProcess(spec, cwd, env);
    const conn = client({ name: 'deskrelay' }).connect(proc.stream);
    let timer: NodeJS.Timeout | undefined;
    try {
      const init = await Promise.race([
        conn.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: CLIENT_CAPABILITIES, clientInfo: { name: 'deskrelay', version: '1' } }).then(() => undefined),
        proc.exited.then((how) => proc.startFailure(how)),
        new Promise<string>((r) => (timer = setTimeout(() => r(`it did not answer initialize within ${PROBE_TIMEOUT_MS / 1000} s`), PROBE_TIMEOUT_MS))),
      ]);
      return init === undefined ? { ...base, available: true } : { ...base, available: false, reason: `${spec.name} could not start: ${init}.` };
    } catch (err) {
      const how = await proc.endedWithin(3000);
      if (how) return { ...base, available: false, reason: `${spec.name} could not start: ${proc.startFailure(how)}.` };
      return { ...base, available: false, reason: `${spec.name} failed initialize: ${redactTokens(err instanceof Error ? err.message : String(err), Object.values(spec.env))}.` };
    } finally {
      clearTimeout(timer);
      conn.close();
      proc.kill();
    }
  }
}
