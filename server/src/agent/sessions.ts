import { randomUUID } from 'node:crypto';
import type { ChatService } from '../chat/service';
import type { Logger } from '../logger';
import type { AgentPush } from '../protocol';
import type { EngineFactory } from './engine';
import type { AgentLimits } from './limits';
import type { AgentTool } from './tools/tool';
import { AgentSession } from './session';
import type { Workspace } from './workspace';

export interface SessionStoreDeps {
  chat: ChatService;
  limits: AgentLimits;
  logger: Logger;
  push(payload: AgentPush): void;
  /** Tools every session gets besides the built-in and the workspace's (the CLI's MCP servers'). */
  tools?(): readonly AgentTool[];
}

/**
 * The agent sessions of this relay run, in memory only (SPEC: no history is persisted), at most
 * `limits.maxSessions`: a new one drops the oldest idle, stopped or failed session first; when
 * every session is busy, none is made (the caller says so).
 */
export class SessionStore {
  private readonly sessions = new Map<string, AgentSession>();

  constructor(private readonly deps: SessionStoreDeps) {}

  list(): AgentSession[] {
    return [...this.sessions.values()].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  get(id: string): AgentSession | undefined {
    return this.sessions.get(id);
  }

  /** A new session in `workspace`, or undefined when the store is full of busy sessions. */
  create(workspace: Workspace, agent?: { id: string; engine: EngineFactory }, more: { id?: string; worktree?: AgentSession['worktree'] } = {}): AgentSession | undefined {
    if (this.sessions.size >= this.deps.limits.maxSessions) {
      const idle = [...this.sessions.values()].filter((s) => !s.busy).sort((a, b) => a.updatedAt - b.updatedAt)[0];
      if (!idle) return undefined;
      this.deps.logger.info(`agent ${idle.id.slice(0, 8)}: dropped (the desktop keeps ${this.deps.limits.maxSessions} sessions)`);
      this.delete(idle.id);
    }
    const session = new AgentSession({ id: more.id ?? randomUUID(), workspace, ...this.deps, ...(agent ? { agent } : {}), ...(more.worktree ? { worktree: more.worktree } : {}) });
    this.sessions.set(session.id, session);
    return session;
  }

  delete(id: string): boolean {
    const session = this.sessions.get(id);
    if (!session) return false;
    this.sessions.delete(id);
    session.close();
    return true;
  }

  closeAll(): void {
    for (const id of [...this.sessions.keys()]) this.delete(id);
  }
}
