import type { ChatService } from '../chat/service';
import type { Logger } from '../logger';
import type { AgentPush } from '../protocol';
import type { KeptSummary } from '../store/agentSessions';
import type { EngineFactory } from './engine';
import type { AgentLimits } from './limits';
import type { AgentSession } from './session';
import type { AgentTool } from './tools';
import type { Workspace } from './workspace';
import type { SessionWorktree } from './worktrees';

/** What an agent session is given: its folder, the model, its limits and the host's hooks. */
export interface SessionDeps {
  id: string;
  workspace: Workspace;
  chat: ChatService;
  limits: AgentLimits;
  logger: Logger;
  /** A push for the phone (sent only when no client is attached to the session's events). */
  push(payload: AgentPush): void;
  /** The session's own git worktree (`"worktree": true`): its workspace is rooted there; Merge and Discard act on it. */
  worktree?: SessionWorktree & { into?: string };
  /** A kept session after a restart, by its summary: listed idle, read whole on first use (AgentSession.wake). */
  restored?: KeptSummary;
  /** Something changed that a kept session saves (an event; the conversation with it). */
  changed?(session: AgentSession): void;
  /** Tools the relay's host adds to every session (MCP servers'), asked at every model call. */
  tools?(): readonly AgentTool[];
  /** Which agent runs the turns (`deskrelay`: the relay's own loop) and, for another, its engine. */
  agent?: { id: string; engine: EngineFactory };
}

