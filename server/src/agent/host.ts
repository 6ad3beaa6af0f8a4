import type { AgentLimits } from './limits';
import type { Workspace } from './workspace';

/**
 * What a relay's host gives the agent: the folders it may work in, asked afresh on every
 * request (VS Code: the open folders, while the setting is on and the workspace trusted; the
 * CLI: its --agent folders). An empty list means the agent is off.
 */
export interface AgentHost {
  workspaces(): readonly Workspace[];
  /** How the person at the desk turns the agent on, said in the `agent.disabled` answer. */
  howToEnable?: string;
  limits?: Partial<AgentLimits>;
}
