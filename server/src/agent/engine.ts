import type { Logger } from '../logger';
import type { AgentEvent } from '../protocol';
import type { ApprovalGate } from './gate';
import type { AgentLimits } from './limits';
import type { Workspace } from './workspace';

/**
 * The seam between a session and what runs its turns. A session keeps what every agent shares
 * (its events, its gate with call ids, approvals and grants, its status, push, the door); an
 * engine only runs turns. Without one, a session runs DeskRelay's own loop (model ↔ tools);
 * an ACP agent (acp/engine.ts) is the other engine.
 */
export interface EngineHost {
  readonly sessionId: string;
  readonly workspace: Workspace;
  readonly limits: AgentLimits;
  readonly logger: Logger;
  /** Every approval passes here, as for DeskRelay's own tools. */
  readonly gate: ApprovalGate;
  emit(event: AgentEvent): void;
  /** Something the snapshot's transcript keeps (a tool call or its result). */
  record(item: EngineTranscriptItem): void;
  /** The engine ended on its own between turns (its process crashed): the session fails with `message`. */
  ended(message: string): void;
  /**
   * A kept session read back after a restart: what the engine kept (Engine.kept) and the
   * earlier transcript as text, for an agent that cannot load its own session.
   */
  readonly resumed?: { state?: Record<string, unknown>; earlier(): string };
}

export type EngineTranscriptItem =
  | { role: 'assistant'; text: string; toolCalls: { callId: string; tool: string; input: Record<string, unknown> }[] }
  | { role: 'tool'; callId: string; tool: string; ok: boolean; output: string; denied?: boolean };

/** How a turn ended: `ended` when the engine can take no more turns (the session stays failed). */
export type TurnOutcome = { ok: true } | { ok: false; message: string; ended?: boolean };

export interface Engine {
  /** One user turn; settles when the agent ends it. A stop aborts `signal`. */
  turn(text: string, signal: AbortSignal): Promise<TurnOutcome>;
  /** A choice the agent offers (its mode, its model); an EngineOptionError when it cannot be made. */
  choose?(what: 'mode' | 'model', id: string): Promise<void>;
  /** What a snapshot adds: the agent's plan, commands, modes and models as last told. */
  state?(): Record<string, unknown>;
  /** What a kept session saves to go on after a restart (an ACP session id). */
  kept?(): Record<string, unknown> | undefined;
  /** The session is gone: end whatever the engine runs; settles once it has ended. */
  close(): void | Promise<void>;
}

export type EngineFactory = (host: EngineHost) => Engine;

/** A choice the engine cannot make: its message is the door's answer. */
export class EngineOptionError extends Error {}
