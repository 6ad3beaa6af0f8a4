import { randomUUID } from 'node:crypto';
import type { ChatService } from '../chat/service';
import type { Logger } from '../logger';
import type { AgentPush } from '../protocol';
import type { EngineFactory } from './engine';
import type { AgentLimits } from './limits';
import type { AgentTool } from './tools/tool';
import { AgentSession } from './session';
import type { Workspace } from './workspace';
import type { AgentSessionKeep, KeptSummary } from '../store/agentSessions';

/** An ACP agent for a session: its id and its engine. */
export type Agent = { id: string; engine: EngineFactory };

export interface SessionStoreDeps {
  chat: ChatService;
  limits: AgentLimits;
  logger: Logger;
  push(payload: AgentPush): void;
  /** Tools every session gets besides the built-in and the workspace's (the CLI's MCP servers'). */
  tools?(): readonly AgentTool[];
}

/**
 * The agent sessions of this relay run, at most `limits.maxSessions` (with sessions kept on the
 * desktop, at most as many as the desktop keeps): a new one drops the oldest idle, stopped or
 * failed session first; when every session is busy, none is made (the caller says so). Kept
 * (keep()): DeskRelay's own sessions are saved on every change and read back after a restart.
 */
export class SessionStore {
  private readonly sessions = new Map<string, AgentSession>();
  private kept: AgentSessionKeep | undefined;

  constructor(private readonly deps: SessionStoreDeps) {}

  private get cap(): number {
    return Math.max(this.deps.limits.maxSessions, this.kept ? this.kept.count : 0);
  }

  /**
   * Keeps sessions on the desktop from now on, and brings back those kept (`workspaceOf` finds
   * each one's folder, `agentOf` an ACP session's agent; one whose folder or agent is gone stays
   * on disk, not listed).
   */
  keep(kept: AgentSessionKeep, stored: readonly KeptSummary[], workspaceOf: (s: KeptSummary) => Workspace | undefined, agentOf: (id: string) => Agent | undefined = () => undefined): void {
    this.kept = kept;
    for (const r of stored) {
      if (this.sessions.has(r.id)) continue;
      const workspace = workspaceOf(r);
      if (!workspace) {
        this.deps.logger.info(`agent ${r.id.slice(0, 8)}: kept, but its folder "${r.folder}" is not an agent folder now: not listed`);
        continue;
      }
      const agent = r.agent === undefined ? undefined : agentOf(r.agent);
      if (r.agent !== undefined && !agent) {
        this.deps.logger.info(`agent ${r.id.slice(0, 8)}: kept, but its agent "${r.agent}" is not configured now: not listed`);
        continue;
      }
      const session = new AgentSession({ id: r.id, workspace, ...this.deps, restored: r, ...(agent ? { agent } : {}), ...(r.worktree ? { worktree: r.worktree } : {}), changed: this.saver() });
      this.sessions.set(session.id, session);
    }
  }

  /** Ends keeping (the relay stops): writes under way finish, and the stop itself is not saved. */
  async unkeep(): Promise<void> {
    const kept = this.kept;
    this.kept = undefined;
    await kept?.close();
  }

  private saver(): ((s: AgentSession) => void) | undefined {
    const kept = this.kept;
    return kept ? (s) => kept.save(s.id, () => s.record()) : undefined;
  }

  list(): AgentSession[] {
    return [...this.sessions.values()].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  /** A session by id; a kept one is read whole now if it was not yet (undefined when its file turns out damaged: set aside). */
  get(id: string): AgentSession | undefined {
    const session = this.sessions.get(id);
    if (!session?.asleep) return session;
    const stored = this.kept?.load(id);
    if (!stored) {
      this.sessions.delete(id);
      session.close();
      return undefined;
    }
    session.wake(stored);
    return session;
  }

  /** A new session in `workspace`, or undefined when the store is full of busy sessions. */
  create(workspace: Workspace, agent?: Agent, more: { id?: string; worktree?: AgentSession['worktree'] } = {}): AgentSession | undefined {
    if (this.sessions.size >= this.cap) {
      const idle = [...this.sessions.values()].filter((s) => !s.busy).sort((a, b) => a.updatedAt - b.updatedAt)[0];
      if (!idle) return undefined;
      this.deps.logger.info(`agent ${idle.id.slice(0, 8)}: dropped (the desktop keeps ${this.cap} sessions)`);
      this.delete(idle.id);
    }
    const changed = this.saver();
    const session = new AgentSession({ id: more.id ?? randomUUID(), workspace, ...this.deps, ...(agent ? { agent } : {}), ...(more.worktree ? { worktree: more.worktree } : {}), ...(changed ? { changed } : {}) });
    this.sessions.set(session.id, session);
    return session;
  }

  delete(id: string): boolean {
    const session = this.sessions.get(id);
    if (!session) return false;
    this.sessions.delete(id);
    void this.kept?.remove(id);
    session.close();
    return true;
  }

  /** Ends every session in memory (the agent turned off, the relay stopping); kept files stay. */
  closeAll(): void {
    for (const [id, session] of [...this.sessions]) {
      this.sessions.delete(id);
      session.close();
    }
  }
}
