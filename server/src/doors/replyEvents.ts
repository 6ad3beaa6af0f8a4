import type { Logger } from '../logger';
import type { AgentPush } from '../protocol';

/** A resumable generation (Idempotency-Key) ended: `ok` false for an error; `attached` is how many clients were listening then. */
export interface ReplyFinished {
  idempotencyKey: string;
  ok: boolean;
  /** Ended on purpose before the provider finished: the client's cancel, nobody resuming it in time, the relay stopping. */
  stopped: boolean;
  attached: number;
  /** How long the finished reply can still be fetched (a push about it is useless after that). */
  replayableMs: number;
}

/** An agent session in the list of kept conversations (`ConversationSummary` once the door words it). */
export interface AgentConversationEntry {
  id: string;
  title: string;
  updatedAt: number;
  preview: string;
}

export type ReplyFinishedListener = (event: ReplyFinished) => void;

/**
 * What one door tells another, per relay run: the resumable door says when a generation ends,
 * the push door listens. A listener's failure is logged and never reaches the door that told.
 */
export class ReplyEvents {
  private readonly listeners = new Set<ReplyFinishedListener>();
  private readonly agentListeners = new Set<(payload: AgentPush) => void>();

  /**
   * The agent's sessions of this run, as the kept-conversations list shows them (issue 30); the
   * agent door sets it, and it answers none while the agent is off.
   */
  agentSessions: () => AgentConversationEntry[] = () => [];

  constructor(private readonly logger: Logger) {}

  /** Returns the unsubscribe. */
  onFinished(listener: ReplyFinishedListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** The agent door's pushes (a decision waits, a turn ended) with nobody attached; the push door sends them. */
  onAgentPush(listener: (payload: AgentPush) => void): () => void {
    this.agentListeners.add(listener);
    return () => void this.agentListeners.delete(listener);
  }

  agentPush(payload: AgentPush): void {
    for (const listener of this.agentListeners) {
      try {
        listener(payload);
      } catch (err) {
        this.logger.error(`an agent push listener failed: ${err instanceof Error ? err.name : typeof err}`);
      }
    }
  }

  finished(event: ReplyFinished): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.logger.error(`a reply-finished listener failed: ${err instanceof Error ? err.name : typeof err}`);
      }
    }
  }
}
