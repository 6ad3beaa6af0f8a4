import { CancelReason } from '../chat/events';
import type { ChatHandle } from '../chat/service';
import type { AgentEvent, AgentStatus } from '../protocol';
import type { ChatMessage, ToolCall, ToolSpec } from '../providers/types';
import { callModel, ContextFitter, Conversation, NOT_RUN, offeredTools, runAskedCommand, runToolCall, type ModelReply } from './turn';
import { JsonEventLog } from '../streams/frameLog';
import { MAX_CALLS_PER_REPLY } from './limits';
import { answersForUnanswered, earlierText, RESTARTED_DENIED, RESTARTED_INTERRUPTED, toolOf } from './restored';
import type { AppliedChange, CallResult, SessionSnapshot, TranscriptItem } from './transcript';
import type { Engine } from './engine';
import { EngineOptionError } from './engine';
import { ApprovalGate, type Decision } from './gate';
import { readInstructions, type ProjectInstructions } from './instructions';
import type { SessionWorktree } from './worktrees';
import { systemPrompt } from './prompt';
import type { AgentTool } from './tools';
import type { Workspace } from './workspace';
import type { SessionDeps } from './sessionDeps';
import type { StoredAgentSession } from '../store/agentSessions';

export type { AppliedChange, SessionSnapshot, TranscriptItem } from './transcript';
export type { SessionDeps } from './sessionDeps';

const STOPPED_BY_USER = 'Stopped by the user.';
const SESSION_FULL = 'Not run: the session is full.';
const TOO_MANY_CALLS = `Not run: one reply may carry at most ${MAX_CALLS_PER_REPLY} tool calls; call again for the rest.`;

/**
 * One agent session: the conversation with the model, the loop that runs the tools it calls
 * (asking the user first where the policy says so), and the numbered events a phone follows.
 * It knows the Workspace contract and the chat service, not the host or the door.
 */
export class AgentSession {
  readonly id: string;
  readonly log: JsonEventLog<AgentEvent>;
  readonly createdAt: number;
  title = '';
  /** A kept session listed from its summary, not read whole yet (SessionStore.get wakes it). */
  asleep: boolean;
  private statusValue: AgentStatus = 'idle';
  private updated = Date.now();
  private readonly conversation = new Conversation();
  private readonly transcript: TranscriptItem[] = [];
  /** Every call passes here before it runs: its id, its approval, the decision, the grants. */
  readonly gate: ApprovalGate;
  private readonly queue: string[] = [];
  /** Edits applied in this session, in order, for the desk's Changes list and the user's revert. */
  private readonly applied = new Map<string, AppliedChange>();
  /** What the model is told at its next step (an edit the user reverted). */
  private readonly notes: string[] = [];
  /** Aborted by stop(): the model request, a running command, a search. */
  private turn: AbortController | undefined;
  private model: ChatHandle | undefined;
  private closed = false;
  /** The turn running or last run: a new one starts only after it settled. */
  private turns: Promise<void> = Promise.resolve();
  private stops = 0;
  /** The project's instructions, read once before the first model call (undefined: none, or not read yet). */
  private projectInstructions: ProjectInstructions | undefined;
  private instructionsRead = false;
  private readonly fitter: ContextFitter;
  /** Another agent's engine; absent, the turns are DeskRelay's own loop. */
  private readonly engine: Engine | undefined;
  /** Set when the engine can take no more turns (its process ended). */
  private engineEnded: string | undefined;
  /** A kept session's transcript items as read back (what an agent that cannot load its session is given). */
  private restoredItems = 0;

  constructor(private readonly deps: SessionDeps) {
    this.id = deps.id;
    this.log = new JsonEventLog<AgentEvent>(deps.limits.maxEventLogBytes);
    this.addMessage({ role: 'system', content: systemPrompt(deps.workspace) });
    this.gate = new ApprovalGate({
      asked: (approval) => {
        this.emit({ type: 'approval', ...approval });
        this.setStatus('waiting');
        if (this.log.attached === 0) this.deps.push({ type: 'agent_needs_you', session: this.id, callId: approval.callId });
      },
      decided: (callId, decision, waiting, note) => {
        // Every screen following the session (the phone, the desk) shows the same decision on its card.
        this.emit({ type: 'decision', callId, decision, ...(note ? { note } : {}) });
        if (this.statusValue === 'waiting' && waiting === 0) this.setStatus('running');
      },
    });
    this.engine = deps.agent?.engine({
      sessionId: this.id,
      workspace: deps.workspace,
      limits: deps.limits,
      logger: deps.logger,
      gate: this.gate,
      emit: (event) => this.emit(event),
      record: (item) => this.transcript.push(item),
      ended: (message) => this.engineEnd(message),
      ...(deps.restored ? { resumed: { ...(deps.restored.engine ? { state: deps.restored.engine } : {}), earlier: () => earlierText(this.transcript.slice(0, this.restoredItems)) } } : {}),
    });
    this.fitter = new ContextFitter({ chat: deps.chat, logger: deps.logger, short: this.short, emit: (e) => this.emit(e), summarise: (signal, messages) => this.callModel(signal, messages) });
    this.createdAt = deps.restored?.createdAt ?? Date.now();
    // Kept: listed from its summary, idle; read whole on first use (wake).
    this.title = deps.restored?.title ?? '';
    this.updated = deps.restored?.updatedAt ?? this.updated;
    this.asleep = deps.restored !== undefined;
  }

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

  /** True while a turn runs or waits for an approval. */
  get busy(): boolean {
    return this.statusValue === 'running' || this.statusValue === 'waiting';
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

  /** The user's next message: a new turn now, or queued until the model next stops when a turn runs. */
  send(text: string): void {
    if (this.closed) return;
    if (!this.title) this.title = text.replace(/\s+/g, ' ').trim().slice(0, 80);
    if (this.busy) {
      // Shown as waiting on every screen until it joins the conversation (its `user` event).
      this.queue.push(text);
      this.emit({ type: 'queued', text });
      return;
    }
    this.setStatus('running');
    const stops = this.stops;
    // After the previous turn has wound down (a stopped command still reporting), never beside it.
    this.turns = this.turns
      .then(() => {
        if (this.stops !== stops || this.closed) return;
        // Messages queued before a stop join first, in the order sent; another agent gets them all in one prompt.
        const texts = [...this.queue.splice(0), text];
        for (const t of texts) this.addUser(t);
        return this.engine ? this.runEngineTurn(this.engine, texts.join('\n\n')) : this.runTurn();
      })
      .catch((err: unknown) => {
        this.deps.logger.error(`agent ${this.short}: the turn failed unexpectedly: ${err instanceof Error ? `${err.name}: ${err.message}` : typeof err}`);
        this.emit({ type: 'error', message: 'The agent failed unexpectedly; see the DeskRelay log on the desktop.' });
        this.setStatus('failed');
      });
  }

  /** The user's answer to a pending approval (the gate's decide); NotPendingError when none waits for callId. */
  decide(callId: string, decision: Decision, note?: string): void {
    this.gate.decide(callId, decision, note);
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

  /** Ends the session for good (deleted, dropped, the relay stopping): stopped, listeners closed. */
  close(): void {
    this.stop();
    this.closed = true;
    this.engine?.close();
    this.log.closeAll();
  }

  /** The agent's mode or model, where its engine offers a choice; an EngineOptionError otherwise. */
  async choose(what: 'mode' | 'model', id: string): Promise<void> {
    if (!this.engine?.choose) throw new EngineOptionError(`This session's agent (${this.agent}) offers no ${what} to choose.`);
    await this.engine.choose(what, id);
  }

  /** Another agent's turn: its prompt, then the messages queued meanwhile as one more prompt. */
  private async runEngineTurn(engine: Engine, text: string): Promise<void> {
    const turn = new AbortController();
    this.turn = turn;
    for (let next: string | undefined = text; next !== undefined; ) {
      const out = this.engineEnded === undefined ? await engine.turn(next, turn.signal) : { ok: false as const, message: this.engineEnded };
      // A stopped turn says nothing more, unless the stop had to end the agent itself.
      if (turn.signal.aborted && (out.ok || !out.ended)) return;
      if (!out.ok) {
        if (out.ended) this.engineEnded = out.message;
        return this.fail(out.message, true);
      }
      const queued = this.queue.splice(0);
      for (const q of queued) this.addUser(q);
      next = queued.length > 0 ? queued.join('\n\n') : undefined;
    }
    this.turn = undefined;
    this.setStatus('idle');
    this.notifyIdle();
  }

  /** The engine ended between turns (a crash while idle): said once, the session failed. */
  private engineEnd(message: string): void {
    if (this.engineEnded !== undefined || this.closed) return;
    this.engineEnded = message;
    if (!this.busy) this.fail(message); // else the running turn says it
  }

  /** The turn failed (or the engine ended): said, the session failed; `notify`: the phone is pushed when nobody follows. */
  private fail(message: string, notify = false): void {
    this.emit({ type: 'error', message });
    this.setStatus('failed');
    if (notify) this.notifyIdle();
  }

  private get short(): string {
    return this.id.slice(0, 8);
  }

  private emit(event: AgentEvent): void {
    this.updated = Date.now();
    this.log.append(event);
    this.deps.changed?.(this);
  }

  private setStatus(status: AgentStatus): void {
    if (this.statusValue === status) return;
    this.statusValue = status;
    this.emit({ type: 'status', status });
  }

  private addUser(text: string): void {
    this.addMessage({ role: 'user', content: text });
    this.transcript.push({ role: 'user', text });
    this.emit({ type: 'user', text });
  }

  private addMessage(m: ChatMessage): void {
    this.conversation.add(m);
  }

  private get full(): boolean {
    return this.conversation.size > this.deps.limits.maxConversationChars;
  }

  /** One turn: model ↔ tools until the model answers without calling a tool, a limit, a failure or a stop. */
  private async runTurn(): Promise<void> {
    const turn = new AbortController();
    this.turn = turn;
    const { limits } = this.deps;
    await this.readProjectInstructions();
    let steps = 0;
    for (;;) {
      if (turn.signal.aborted) return;
      if (steps >= limits.maxSteps) {
        this.emit({ type: 'error', message: `The agent stopped after ${limits.maxSteps} model calls in this turn (its step limit). Send a message to let it go on.` });
        break;
      }
      if (this.full) {
        this.emit({ type: 'error', message: `This session's conversation passed ${limits.maxConversationChars} characters, more than the desktop sends a model; start a new session.` });
        break;
      }
      steps++;
      for (const note of this.notes.splice(0)) this.addMessage({ role: 'user', content: note });
      await this.fitter.fit(this.conversation, this.tools().map((t) => t.spec), turn.signal);
      if (turn.signal.aborted) return;
      const reply = await this.callModel(turn.signal, this.conversation.messages, this.tools().map((t) => t.spec));
      if (turn.signal.aborted) return;
      if (!reply.ok) return this.fail(reply.message, true);
      // The model's ids stay in its conversation; events, cards and approvals use the relay's own
      // (a model may repeat an id, and an approval must name exactly one call).
      const calls = reply.calls.slice(0, MAX_CALLS_PER_REPLY).map((call) => ({ call, callId: this.gate.newCallId() }));
      this.addMessage({ role: 'assistant', content: reply.text, ...(reply.calls.length ? { toolCalls: reply.calls } : {}) });
      this.transcript.push({ role: 'assistant', text: reply.text, toolCalls: calls.map(({ call, callId }) => ({ callId, tool: call.name, input: call.arguments })) });
      for (const { call, callId } of calls) {
        // Each result counts as it is added: one reply of many calls cannot outgrow the cap, and
        // past it the rest are answered without running (the provider wants an answer to each).
        const result = turn.signal.aborted
          ? { ok: false, output: NOT_RUN, denied: true }
          : this.full
            ? { ok: false, output: SESSION_FULL }
            : await this.runCall(call, callId, turn.signal);
        this.addMessage({ role: 'tool', content: result.output, toolCallId: call.id, name: call.name });
        this.transcript.push({ role: 'tool', callId, tool: call.name, ...result });
        this.emit({ type: 'tool_result', callId, ...result });
      }
      const extra = reply.calls.slice(MAX_CALLS_PER_REPLY);
      for (const call of extra) this.addMessage({ role: 'tool', content: TOO_MANY_CALLS, toolCallId: call.id, name: call.name });
      if (extra.length > 0) this.emit({ type: 'error', message: `The model asked for ${reply.calls.length} tool calls in one reply; the first ${MAX_CALLS_PER_REPLY} were taken, the rest were not run.` });
      if (turn.signal.aborted) return;
      // Messages sent while the model worked join the conversation when it next stops.
      for (const text of this.queue.splice(0)) this.addUser(text);
      if (reply.calls.length === 0 && this.conversation.messages.at(-1)?.role !== 'user') break;
    }
    this.turn = undefined;
    this.setStatus('idle');
    this.notifyIdle();
  }

  /** The folder's AGENTS.md (or the like) joins the system message, once, before the first model call. */
  private async readProjectInstructions(): Promise<void> {
    if (this.instructionsRead) return;
    this.instructionsRead = true;
    try {
      this.projectInstructions = await readInstructions(this.deps.workspace);
    } catch (err) {
      this.deps.logger.warn(`agent ${this.short}: the project's instructions could not be read (${(err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.name : 'error')})`);
    }
    if (!this.projectInstructions) return;
    this.conversation.setSystem(systemPrompt(this.deps.workspace, this.projectInstructions));
    this.deps.logger.info(`agent ${this.short}: the system prompt carries ${this.projectInstructions.file}${this.projectInstructions.cut ? ' (cut)' : ''}`);
  }

  private tools(): readonly AgentTool[] {
    return offeredTools([...(this.deps.workspace.hostTools?.() ?? []), ...(this.deps.tools?.() ?? [])]);
  }

  private notifyIdle(): void {
    if (this.log.attached === 0) this.deps.push({ type: 'agent_idle', session: this.id });
  }

  /** One model request (see turn.ts): with `tools` shown as it comes, without them a quiet summary call. */
  private callModel(signal: AbortSignal, messages: ChatMessage[], tools?: ToolSpec[]): Promise<ModelReply> {
    return callModel({ chat: this.deps.chat, emit: (e) => this.emit(e), running: (h) => void (this.model = h) }, signal, messages, tools);
  }

  private runCall(call: ToolCall, callId: string, signal: AbortSignal): Promise<CallResult> {
    const { logger, limits, workspace } = this.deps;
    const deps = { workspace, limits, logger, gate: this.gate, short: this.short, emit: (e: AgentEvent) => this.emit(e), tools: this.tools(), applied: (c: AppliedChange) => void this.applied.set(c.callId, c) };
    return runToolCall(deps, call, callId, signal);
  }
}
