/** The agent's limits; every one ends what it limits with a message, never silently (docs/agent.md says why each exists). */
export interface AgentLimits {
  /** Model calls in one turn before the turn ends with a message (a model looping on tools). */
  maxSteps: number;
  /** A tool's result text at most (UTF-8 bytes); the rest is cut with a note. */
  maxResultBytes: number;
  /** A command's run time before its process group is killed. */
  commandTimeoutMs: number;
  /** A command's output kept (its end). */
  maxCommandOutputBytes: number;
  /** Sessions kept; past it the oldest idle one is dropped. */
  maxSessions: number;
  /** One session's event log, framed bytes; older events are dropped (the snapshot still has the transcript). */
  maxEventLogBytes: number;
  /** One session's conversation (characters sent to the model); past it the turn ends with a message. */
  maxConversationChars: number;
  /** list_files entries and search matches at most. */
  maxListEntries: number;
  maxSearchMatches: number;
}

/** Tool calls one model reply may carry; the rest are answered "not run" (a reply of thousands would run them all). */
export const MAX_CALLS_PER_REPLY = 64;

export const DEFAULT_LIMITS: AgentLimits = {
  maxSteps: 40,
  maxResultBytes: 64 * 1024,
  commandTimeoutMs: 120_000,
  maxCommandOutputBytes: 64 * 1024,
  maxSessions: 32,
  maxEventLogBytes: 4 * 1024 * 1024,
  maxConversationChars: 8 * 1024 * 1024,
  maxListEntries: 2000,
  maxSearchMatches: 200,
};
