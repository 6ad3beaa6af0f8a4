/**
 * An agent session's turns and the store that holds the sessions: what runs when a phone sends
 * a message and decides an approval. The session's state, and what is done with it outside its
 * turns (kept, shown, stopped, reverted), is SessionState (sessionState.ts).
 */
import { randomUUID } from 'node:crypto';
import type { ChatService } from '../chat/service';
import type { Logger } from '../logger';
import type { AgentEvent, AgentPush, AgentStatus } from '../protocol';
import type { ChatMessage, ToolCall, ToolSpec } from '../providers/types';
import type { AgentSessionKeep, KeptSummary } from '../store/agentSessions';
import type { Engine, EngineFactory } from './engine';
import { ApprovalGate, type Decision } from './gate';
import { readInstructions } from './instructions';
import { MAX_CALLS_PER_REPLY, type AgentLimits } from './limits';
import { systemPrompt } from './prompt';
import { earlierText } from './restored';
import type { SessionDeps } from './sessionDeps';
import { SessionState } from './sessionState';
import type { AgentTool } from './tools';
import type { AppliedChange, CallResult } from './transcript';
import { callModel, ContextFitter, NOT_RUN, offeredTools, runToolCall, type ModelReply } from './turn';
import type { Workspace } from './workspace';

export type { AppliedChange, SessionSnapshot, TranscriptItem } from './transcript';
export type { SessionDeps } from './sessionDeps';

const SESSION_FULL = 'Not run: the session is full.';
/** How long a closing session waits for its stopped turn: a command's SIGTERM, its 2 s to SIGKILL, the sweep. */
const CLOSE_TURN_MS = 5000;
const TOO_MANY_CALLS = `Not run: one reply may carry at most ${MAX_CALLS_PER_REPLY} tool calls; call again for the rest.`;

/**
 * One agent session: the conversation with the model, the loop that runs the tools it calls
 * (asking the user first where the policy says so), and the numbered events a phone follows.
 * It knows the Workspace contract and the chat service, not the host or the door.
 */
export class AgentSession extends SessionState {
  override readonly gate: ApprovalGate;
  /** The turn running or last run: a new one starts only after it settled. */
  private turns: Promise<void> = Promise.resolve();
  private readonly fitter: ContextFitter;
  protected override readonly engine: Engine | undefined;
  /** Set when the engine can take no more turns (its process ended). */
  private engineEnded: string | undefined;

  constructor(deps: SessionDeps) {
    super(deps);
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
  }

  /** True while a turn runs or waits for an approval. */
  override get busy(): boolean {
    return this.statusValue === 'running' || this.statusValue === 'waiting';
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

  /**
   * Also waits for the turn the close stopped to end (at most CLOSE_TURN_MS): a command it was
   * running is killed, SIGKILL after its grace included, before a relay that stops exits, so
   * none outlives it (the SIGKILL timer would die with the process).
   */
  override async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TURN_MS)));
    try {
      await Promise.all([super.close(), Promise.race([this.turns, late])]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The user's answer to a pending approval (the gate's decide); NotPendingError when none waits for callId. */
  decide(callId: string, decision: Decision, note?: string): void {
    this.gate.decide(callId, decision, note);
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

  protected override get short(): string {
    return this.id.slice(0, 8);
  }

  protected override emit(event: AgentEvent): void {
    this.updated = Date.now();
    this.log.append(event);
    this.deps.changed?.(this);
  }

  protected override setStatus(status: AgentStatus): void {
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
      void session.close();
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
    void session.close();
    return true;
  }

  /**
   * Ends every session in memory (the agent turned off, the relay stopping); kept files stay.
   * Settles once their agents' processes have ended, so a relay that stops leaves none behind.
   */
  async closeAll(): Promise<void> {
    const closing = [...this.sessions].map(([id, session]) => {
      this.sessions.delete(id);
      return session.close();
    });
    await Promise.all(closing);
  }
}
