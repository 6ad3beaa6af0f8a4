import { CancelReason } from '../chat/events';
import type { ChatHandle } from '../chat/service';
import type { AgentEvent, AgentStatus } from '../protocol';
import { JsonEventLog } from '../streams/frameLog';
import type { StoredAgentSession } from '../store/agentSessions';
import type { Engine } from './engine';
import { EngineOptionError } from './engine';
import type { ApprovalGate } from './gate';
import type { ProjectInstructions } from './instructions';
import { answersForUnanswered, RESTARTED_DENIED, RESTARTED_INTERRUPTED, toolOf } from './restored';
import type { SessionDeps } from './sessionDeps';
import type { AppliedChange, CallResult, SessionSnapshot, TranscriptItem } from './transcript';
import { Conversation, runAskedCommand } from './turn';
import type { Workspace } from './workspace';
import type { SessionWorktree } from './worktrees';

const STOPPED_BY_USER = 'Stopped by the user.';

/**
 * An agent session's state, and what is done with it outside its turns (session.ts runs those):
 * what a kept session saves and how it is read back, what its snapshot shows, and what the user
 * does besides sending a message and deciding: stop, revert an edit, Merge, choose a mode or model.
 */
export abstract class SessionState {
  readonly id: string;
  readonly log: JsonEventLog<AgentEvent>;
  readonly createdAt: number;
  title = '';
  /** A kept session listed from its summary, not read whole yet (SessionStore.get wakes it). */
  asleep: boolean;
  protected statusValue: AgentStatus = 'idle';
  protected updated = Date.now();
  protected readonly conversation = new Conversation();
  protected readonly transcript: TranscriptItem[] = [];
  /** Every call passes here before it runs: its id, its approval, the decision, the grants. */
  abstract readonly gate: ApprovalGate;
  protected readonly queue: string[] = [];
  /** Edits applied in this session, in order, for the desk's Changes list and the user's revert. */
  protected readonly applied = new Map<string, AppliedChange>();
  /** What the model is told at its next step (an edit the user reverted). */
  protected readonly notes: string[] = [];
  /** Aborted by stop(): the model request, a running command, a search. */
  protected turn: AbortController | undefined;
  protected model: ChatHandle | undefined;
  protected closed = false;
  protected stops = 0;
  /** The project's instructions, read once before the first model call (undefined: none, or not read yet). */
  protected projectInstructions: ProjectInstructions | undefined;
  protected instructionsRead = false;
  /** Another agent's engine; absent, the turns are DeskRelay's own loop. */
  protected abstract readonly engine: Engine | undefined;
  /** A kept session's transcript items as read back (what an agent that cannot load its session is given). */
  protected restoredItems = 0;

  constructor(protected readonly deps: SessionDeps) {
    this.id = deps.id;
    this.log = new JsonEventLog<AgentEvent>(deps.limits.maxEventLogBytes, { of: 'a session', whole: 'GET the session for its whole transcript' });
    this.createdAt = deps.restored?.createdAt ?? Date.now();
    // Kept: listed from its summary, idle; read whole on first use (wake).
    this.title = deps.restored?.title ?? '';
    this.updated = deps.restored?.updatedAt ?? this.updated;
    this.asleep = deps.restored !== undefined;
  }

  /** True while a turn runs or waits for an approval. */
  abstract get busy(): boolean;
  protected abstract get short(): string;
  protected abstract emit(event: AgentEvent): void;
  protected abstract setStatus(status: AgentStatus): void;

  /** What a kept session saves: enough to list it, replay it and go on with the conversation. */
  record(): StoredAgentSession {
    return {
      version: 1,
      id: this.id,
      folder: this.folder,
      title: this.title,
      createdAt: this.createdAt,
      updatedAt: this.updated,
      status: this.statusValue,
      messages: this.conversation.messages,
      transcript: this.transcript,
      events: this.log.entries(),
      pending: this.gate.pending.map((p) => p.callId),
      ...(this.projectInstructions ? { instructions: this.projectInstructions } : {}),
      ...(this.deps.worktree ? { worktree: this.deps.worktree } : {}),
      nextCall: this.gate.nextCallNumber,
      ...(this.deps.agent ? { agent: this.deps.agent.id } : {}),
      ...(this.engine?.kept?.() ? { engine: this.engine.kept() } : {}),
    };
  }

  /**
   * Back from the desktop's store after a restart, on first use: the conversation, transcript and
   * events as saved; a turn that was running is marked interrupted, an approval that waited is
   * denied with a note, and every call the model made without an answer is answered (a provider
   * refuses a conversation with a call left unanswered). The session is idle: a message goes on.
   */
  wake(r: StoredAgentSession): void {
    if (!this.asleep) return;
    this.asleep = false;
    this.conversation.reset([...r.messages, ...answersForUnanswered(r.messages)]);
    this.transcript.push(...(r.transcript as TranscriptItem[]));
    this.projectInstructions = r.instructions;
    this.instructionsRead = true;
    this.gate.nextCallNumber = r.nextCall;
    this.log.restore(r.events);
    for (const callId of r.pending) {
      this.emit({ type: 'decision', callId, decision: 'deny' });
      this.transcript.push({ role: 'tool', callId, tool: toolOf(this.transcript, callId), ok: false, denied: true, output: RESTARTED_DENIED });
      this.emit({ type: 'tool_result', callId, ok: false, denied: true, output: RESTARTED_DENIED });
    }
    if (r.status === 'running' || r.status === 'waiting') this.emit({ type: 'error', message: RESTARTED_INTERRUPTED });
    this.restoredItems = this.transcript.length;
    this.statusValue = r.status as AgentStatus;
    this.setStatus('idle');
    this.updated = r.updatedAt;
  }

  get agent(): string {
    return this.deps.agent?.id ?? 'deskrelay';
  }

  get folder(): string {
    return this.deps.workspace.name;
  }

  get status(): AgentStatus {
    return this.statusValue;
  }

  get updatedAt(): number {
    return this.updated;
  }

  /** The instructions file the system prompt carries, once read. */
  get instructionsFile(): string | undefined {
    return this.projectInstructions?.file ?? this.deps.restored?.instructions;
  }

  get pendingCount(): number {
    return this.gate.size;
  }

  /** Characters the conversation holds for the model (what maxConversationChars caps). */
  get conversationSize(): number {
    return this.conversation.size;
  }

  snapshot(): SessionSnapshot {
    return {
      id: this.id,
      agent: this.agent,
      ...this.engine?.state?.(),
      folder: this.folder,
      title: this.title,
      status: this.statusValue,
      updatedAt: new Date(this.updated).toISOString(),
      transcript: this.transcript,
      pending: this.gate.pending,
      lastEventId: this.log.lastId,
      ...(this.instructionsFile ? { instructions: this.instructionsFile } : {}),
      ...(this.deps.worktree ? { worktree: { branch: this.deps.worktree.branch, path: this.deps.worktree.path, ...(this.deps.worktree.into ? { into: this.deps.worktree.into } : {}) } } : {}),
    };
  }

  /**
   * The user took back an edit this session applied (at the desk: its card, the Changes list,
   * Undo): every screen marks it reverted and the model is told at its next step. False when
   * callId is no applied edit, or one already reverted.
   */
  reverted(callId: string): boolean {
    const change = this.applied.get(callId);
    if (!change || change.reverted || this.closed) return false;
    change.reverted = true;
    this.notes.push(`The user reverted your edit to ${change.path}: that file is back as it was before it. Read it again before relying on it.`);
    this.emit({ type: 'reverted', callId, path: change.path });
    return true;
  }

  /** The edits this session applied, oldest first. */
  get changes(): readonly Readonly<AppliedChange>[] {
    return [...this.applied.values()];
  }

  /** Aborts the model request, kills a running command with its process group, denies pending approvals; queued messages wait for the next one. */
  stop(): void {
    if (!this.busy) return;
    this.stops++;
    this.setStatus('stopped');
    this.turn?.abort(new CancelReason(STOPPED_BY_USER));
    this.model?.abort(new CancelReason(STOPPED_BY_USER));
    this.gate.denyAll();
  }

  get worktree(): (SessionWorktree & { into?: string }) | undefined {
    return this.deps.worktree;
  }

  /**
   * A command the user asked for from the session's screen (Merge), not the model: asked through
   * the gate like run_command (the card shows the exact line), run in `where`, its result in
   * the events and the transcript. Not while a turn runs (the caller checks `busy`).
   */
  async runAsked(tool: string, command: string, where: Workspace): Promise<{ ok: boolean; output: string; denied?: boolean }> {
    const callId = this.gate.newCallId();
    const input = { command };
    this.setStatus('running');
    this.emit({ type: 'tool_call', callId, tool, input });
    this.transcript.push({ role: 'assistant', text: '', toolCalls: [{ callId, tool, input }] });
    const decision = this.gate.needsApproval('command', command) ? await this.gate.ask('command', command, { callId, tool, input, command }) : 'allow';
    this.deps.logger.info(`agent ${this.short}: ${tool} command=${JSON.stringify(command)} decision=${decision}`);
    let result: CallResult = { ok: false, denied: true, output: 'The user denied this. Nothing was run.' };
    if (decision !== 'deny' && !this.closed) {
      this.turn = new AbortController();
      result = await runAskedCommand(where, command, this.deps.limits, this.turn.signal);
      this.turn = undefined;
    }
    this.transcript.push({ role: 'tool', callId, tool, ...result });
    this.emit({ type: 'tool_result', callId, ...result });
    if (this.statusValue !== 'stopped') this.setStatus('idle');
    return result;
  }

  /**
   * Ends the session for good (deleted, dropped, the relay stopping): stopped, listeners closed.
   * Settles once its engine has ended (an ACP agent's process, given a moment to save its own
   * session first).
   */
  async close(): Promise<void> {
    this.stop();
    this.closed = true;
    const engineEnded = this.engine?.close();
    this.log.closeAll();
    await engineEnded;
  }

  /** The agent's mode or model, where its engine offers a choice; an EngineOptionError otherwise. */
  async choose(what: 'mode' | 'model', id: string): Promise<void> {
    if (!this.engine?.choose) throw new EngineOptionError(`This session's agent (${this.agent}) offers no ${what} to choose.`);
    await this.engine.choose(what, id);
  }
}
