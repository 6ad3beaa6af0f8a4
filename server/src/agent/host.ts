import type { AcpAgentConfig } from './acp/agents';
import type { AgentLimits } from './limits';
import type { ToolServerStatus } from './mcp/servers';
import type { AgentTool } from './tools/tool';
import type { SessionStore } from './session';
import type { Workspace } from './workspace';

/**
 * Who may drive the agent (issue 36). `device`: only devices the desk allowed, each decision
 * signed with the device's key. `token`: any token (the pairing token included) with unsigned
 * decisions — the behaviour before device keys, for clients that cannot sign; whoever holds a
 * token can then run what they approve themselves.
 */
export type AgentApprovals = 'device' | 'token';

/**
 * What a relay's host gives the agent: the folders it may work in, asked afresh on every
 * request (VS Code: the open folders, while the setting is on and the workspace trusted; the
 * CLI: its --agent folders). An empty list means the agent is off.
 */
export interface AgentHost {
  workspaces(): readonly Workspace[];
  /** How the person at the desk turns the agent on, said in the `agent.disabled` answer. */
  howToEnable?: string;
  /** Who may drive the agent, asked on every request; default `device`. */
  approvals?: () => AgentApprovals;
  /** How the desk allows a device the agent, in this host's words (the `agent.device_not_allowed` answer). */
  howToAllow?: (deviceId: string) => string;
  limits?: Partial<AgentLimits>;
  /**
   * Given the door's session store once the door exists: the desk's own screen (VS Code's
   * sessions view) follows and answers the same sessions in-process, the first answer winning.
   */
  attach?(sessions: SessionStore): void;
  /** ACP agents the desk named (CLI config "agents", VS Code `deskrelay.agent.acpAgents`), asked afresh. */
  acpAgents?(): Readonly<Record<string, AcpAgentConfig>>;
  /** The environment an ACP agent starts from, before its own `env` (default: commandEnv(process.env)). */
  acpEnv?(): NodeJS.ProcessEnv;
  /** Tools every session of this host gets besides the built-in ones and the workspace's (the CLI: its MCP servers'), asked at every model call. */
  tools?(): readonly AgentTool[];
  /** The tool servers configured and how each is doing (`GET /v1/agent/folders` says it: the phone's agent screen). */
  toolServers?(): readonly ToolServerStatus[];
  /** The relay stops: end what the host started (MCP servers). */
  stop?(): Promise<void> | void;
}
