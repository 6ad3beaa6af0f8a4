/**
 * Every event a stream of the relay carries: a reply's (SSE `data:` lines, resumable SSE with
 * numbered `id:` lines, WebSocket text messages), an agent session's, a kept conversation's and
 * the conversations' change feed.
 */
import type { AgentChoice, AgentCommand, AgentPlanEntry, AgentStatus, Decision, PendingApproval } from './agent';

/** A reply: zero or more `token` events, then exactly one `done` or `error`. */
export type TokenEvent = { type: 'token'; delta: string };
export type DoneEvent = { type: 'done'; content: string };
export type ErrorEvent = { type: 'error'; message: string };
export type TerminalEvent = DoneEvent | ErrorEvent;
export type ChatEvent = TokenEvent | TerminalEvent;

/** An approval as its event carries it: the card, its digest, and why it asks again. */
export type ApprovalEvent = { type: 'approval' } & PendingApproval;

/** One event of an agent session's stream (`GET /v1/agent/sessions/:id/events`), numbered by its `id:` line. */
export type AgentEvent =
  | { type: 'user'; text: string }
  | { type: 'text'; delta: string }
  | { type: 'tool_call'; callId: string; tool: string; input: Record<string, unknown> }
  | ApprovalEvent
  | { type: 'decision'; callId: string; decision: Decision; note?: string }
  | { type: 'tool_result'; callId: string; ok: boolean; output: string; denied?: boolean; diff?: string }
  /** A message sent while a turn runs: it joins the conversation (its `user` event) when the model next stops. */
  | { type: 'queued'; text: string }
  /** An applied edit was undone at the desk. */
  | { type: 'reverted'; callId: string; path: string }
  | { type: 'status'; status: AgentStatus }
  | { type: 'error'; message: string }
  /** The conversation was made to fit the model's context: old tool results `dropped` (one note each), or the earlier steps `summarised`. */
  | { type: 'context'; message: string; dropped?: string[]; summarised?: boolean }
  // From ACP agents only (docs/agent.md, "ACP agents"):
  | { type: 'thinking'; delta: string }
  | { type: 'plan'; entries: AgentPlanEntry[] }
  | { type: 'commands'; commands: AgentCommand[] }
  | { type: 'modes'; current: string; modes: AgentChoice[] }
  | { type: 'models'; current: string; models: AgentChoice[] };

export type AgentEventType = AgentEvent['type'];

/** A kept conversation's reply states. */
export type ReplyStatus = 'running' | 'idle' | 'stopped' | 'failed';
/** A kept conversation's events (`GET /v1/conversations/:id/events`): the agent's vocabulary, so one client renders both. */
export type ConversationEvent = { type: 'user'; text: string } | { type: 'text'; delta: string } | { type: 'status'; status: ReplyStatus } | { type: 'error'; message: string };
/** The change feed (`GET /v1/conversations/events`): which conversation to fetch again (or drop). */
export type ConversationChange = { type: 'created' | 'changed' | 'deleted'; id: string };
