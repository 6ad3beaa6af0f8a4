import type { AgentStatus } from '../protocol';
import type { PendingApproval } from './gate';

/** The transcript as a snapshot shows it: what was said and done, in order. */
export type TranscriptItem =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls: { callId: string; tool: string; input: Record<string, unknown> }[] }
  | { role: 'tool'; callId: string; tool: string; ok: boolean; output: string; denied?: boolean; diff?: string };

/** What one tool call came to, for the model and the transcript. */
export type CallResult = { ok: boolean; output: string; denied?: boolean; diff?: string };

/** An edit the session applied (its diff as the card showed it, or as granted). */
export interface AppliedChange {
  callId: string;
  path: string;
  diff: string;
  reverted: boolean;
}

export interface SessionSnapshot {
  id: string;
  /** The agent running it: `deskrelay` or an ACP agent's id from GET /v1/agent/agents. */
  agent: string;
  folder: string;
  title: string;
  status: AgentStatus;
  updatedAt: string;
  transcript: TranscriptItem[];
  pending: PendingApproval[];
  /** The id of the last event so far: follow the events with `Last-Event-ID` set to it. */
  lastEventId: number;
  /** The project's instructions file the system prompt carries (`AGENTS.md`…), when one was used. */
  instructions?: string;
  /** The session's own worktree: its branch, folder, and the project branch Merge merges into. */
  worktree?: { branch: string; path: string; into?: string };
}
