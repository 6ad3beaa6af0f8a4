import { CancelReason } from '../chat/events';
import type { ChatHandle, ChatService, ReplySink } from '../chat/service';
import { ChatError } from '../chat/errors';
import type { Logger } from '../logger';
import type { AgentEvent, AgentPush, AgentStatus } from '../protocol';
import type { ChatMessage, ProviderConfig, ToolCall } from '../providers/types';
import { CHARS_PER_TOKEN, conversationText, DEFAULT_CONTEXT_TOKENS, dropOldResults, estimateTokens, promptBudget, SUMMARY_REQUEST } from './context';
import { AgentEventLog } from './eventLog';
import { capResult, MAX_CALLS_PER_REPLY, type AgentLimits } from './limits';
import type { Engine, EngineFactory } from './engine';
import { EngineOptionError } from './engine';
import { ApprovalGate, type Decision, type PendingApproval } from './gate';
import { readInstructions, type ProjectInstructions } from './instructions';
import type { SessionWorktree } from './worktrees';
import type { StoredAgentSession } from '../store/agentSessions';
import { systemPrompt } from './prompt';
import { ArgumentError, TOOLS, type AgentTool, type PreparedCall } from './tools';
import { WorkspaceError, type Workspace } from './workspace';

export interface SessionDeps {
  id: string;
  workspace: Workspace;
  chat: ChatService;
  limits: AgentLimits;
  logger: Logger;
  /** A push for the phone (sent only when no client is attached to the session's events). */
  push(payload: AgentPush): void;
  /** The session's own git worktree (`"worktree": true`): its workspace is rooted there; Merge and Discard act on it. */
  worktree?: SessionWorktree & { into?: string };
  /** A kept session read back after a restart: it goes on from there, idle. */
  restored?: StoredAgentSession;
  /** Something changed that a kept session saves (an event; the conversation with it). */
  changed?(session: AgentSession): void;
  /** Tools the relay's host adds to every session (MCP servers'), asked at every model call. */
  tools?(): readonly AgentTool[];
  /** Which agent runs the turns (`deskrelay`: the relay's own loop) and, for another, its engine. */
  agent?: { id: string; engine: EngineFactory };
}

/** The transcript as a snapshot shows it: what was said and done, in order. */
export type TranscriptItem =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls: { callId: string; tool: string; input: Record<string, unknown> }[] }
  | { role: 'tool'; callId: string; tool: string; ok: boolean; output: string; denied?: boolean; diff?: string };

type CallResult = { ok: boolean; output: string; denied?: boolean; diff?: string };

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

const STOPPED_BY_USER = 'Stopped by the user.';
const SUMMARY_NOTE = 'Earlier steps of this session were summarised to fit your context. Your summary of them:';
const RESTARTED_NOT_RUN = 'Not run: the desktop relay restarted before this call ran.';
const RESTARTED_DENIED = 'Denied: the desktop relay restarted while this approval waited. Nothing was changed or run.';
const NOT_RUN = 'Not run: the user stopped the agent.';
const SESSION_FULL = 'Not run: the session is full.';
const TOO_MANY_CALLS = `Not run: one reply may carry at most ${MAX_CALLS_PER_REPLY} tool calls; call again for the rest.`;

/**
 * One agent session: the conversation with the model, the loop that runs the tools it calls
 * (asking the user first where the policy says so), and the numbered events a phone follows.
 * It knows the Workspace contract and the chat service, not the host or the door.
 */
export class AgentSession {
  readonly id: string;
  readonly log: AgentEventLog;
  readonly createdAt: number;
  title = '';
  private statusValue: AgentStatus = 'idle';
  private updated = Date.now();
  private readonly messages: ChatMessage[] = [];
  /** The conversation's size in characters, counted as each message is added. */
  private chars = 0;
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
  /** The model's context length, asked once per provider record. */
  private context: { provider: ProviderConfig; tokens: number } | undefined;
  /** Another agent's engine; absent, the turns are DeskRelay's own loop. */
  private readonly engine: Engine | undefined;
  /** Set when the engine can take no more turns (its process ended). */
  private engineEnded: string | undefined;

  constructor(private readonly deps: SessionDeps) {
    this.id = deps.id;
    this.log = new AgentEventLog(deps.limits.maxEventLogBytes);
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
    });
    this.createdAt = deps.restored?.createdAt ?? Date.now();
    if (deps.restored) this.restore(deps.restored);
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
      messages: this.messages,
      transcript: this.transcript,
      events: this.log.entries(),
      pending: this.gate.pending.map((p) => p.callId),
      ...(this.projectInstructions ? { instructions: this.projectInstructions } : {}),
      ...(this.deps.worktree ? { worktree: this.deps.worktree } : {}),
      nextCall: this.gate.nextCallNumber,
    };
  }

  /**
   * Back from the desktop's store after a restart: the conversation, transcript and events as
   * saved; a turn that was running is marked interrupted, an approval that waited is denied with
   * a note, and every call the model made without an answer is answered (a provider refuses a
   * conversation with a call left unanswered). The session is idle: a message goes on.
   */
  private restore(r: StoredAgentSession): void {
    this.title = r.title;
    this.messages.length = 0;
    this.chars = 0;
    for (const m of r.messages) this.addMessage(m);
    this.transcript.push(...(r.transcript as TranscriptItem[]));
    this.projectInstructions = r.instructions;
    this.instructionsRead = true;
    this.gate.nextCallNumber = r.nextCall;
    this.log.restore(r.events);
    const answered = new Set(this.messages.filter((m) => m.role === 'tool').map((m) => m.toolCallId));
    for (const m of this.messages.slice()) {
      for (const call of m.toolCalls ?? []) {
        if (!answered.has(call.id)) this.addMessage({ role: 'tool', content: RESTARTED_NOT_RUN, toolCallId: call.id, name: call.name });
      }
    }
    for (const callId of r.pending) {
      const tool = (this.transcript.find((t) => t.role === 'assistant' && t.toolCalls.some((c) => c.callId === callId)) as Extract<TranscriptItem, { role: 'assistant' }> | undefined)?.toolCalls.find((c) => c.callId === callId)?.tool ?? '';
      this.emit({ type: 'decision', callId, decision: 'deny' });
      this.transcript.push({ role: 'tool', callId, tool, ok: false, denied: true, output: RESTARTED_DENIED });
      this.emit({ type: 'tool_result', callId, ok: false, denied: true, output: RESTARTED_DENIED });
    }
    if (r.status === 'running' || r.status === 'waiting') this.emit({ type: 'error', message: 'The desktop relay restarted while this turn ran: it was interrupted. Send a message to go on.' });
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
    return this.projectInstructions?.file;
  }

  get pendingCount(): number {
    return this.gate.size;
  }

  /** Characters the conversation holds for the model (what maxConversationChars caps). */
  get conversationSize(): number {
    return this.chars;
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
        // Messages queued before a stop join first, in the order sent.
        for (const queued of this.queue.splice(0)) this.addUser(queued);
        this.addUser(text);
        return this.engine ? this.runEngineTurn(this.engine, text) : this.runTurn();
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
    let result: { ok: boolean; output: string; denied?: boolean };
    if (decision === 'deny' || this.closed) {
      result = { ok: false, denied: true, output: 'The user denied this. Nothing was run.' };
    } else {
      const { limits } = this.deps;
      const turn = new AbortController();
      this.turn = turn;
      const ran = await where.runCommand(command, { signal: turn.signal, timeoutMs: limits.commandTimeoutMs, maxOutputBytes: limits.maxCommandOutputBytes });
      this.turn = undefined;
      const ok = ran.exitCode === 0 && !ran.timedOut && !ran.stopped;
      result = { ok, output: capResult(`${ran.output}${ran.output.endsWith('\n') || ran.output === '' ? '' : '\n'}[exit code ${ran.exitCode ?? 'none'}${ran.timedOut ? ', timed out' : ''}${ran.stopped ? ', stopped' : ''}]`, limits.maxResultBytes) };
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
        this.emit({ type: 'error', message: out.message });
        this.setStatus('failed');
        this.notifyIdle();
        return;
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
    if (this.busy) return; // the running turn says it
    this.emit({ type: 'error', message });
    this.setStatus('failed');
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
    this.messages.push(m);
    this.chars += m.content.length + (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0);
  }

  private get full(): boolean {
    return this.chars > this.deps.limits.maxConversationChars;
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
      await this.fitContext(turn.signal);
      if (turn.signal.aborted) return;
      const reply = await this.callModel(turn.signal);
      if (turn.signal.aborted) return;
      if (!reply.ok) {
        this.emit({ type: 'error', message: reply.message });
        this.setStatus('failed');
        this.notifyIdle();
        return;
      }
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
      if (reply.calls.length === 0 && this.messages.at(-1)?.role !== 'user') break;
    }
    this.turn = undefined;
    this.setStatus('idle');
    this.notifyIdle();
  }

  /**
   * Before a model call: when the conversation would not fit the model's context (its length
   * from the provider, else the provider record's contextLength, else 32k tokens; 4 characters a
   * token), the oldest tool results become one-line notes; if it still does not fit, the model
   * is asked for a summary of the session so far and the conversation goes on from it. Each step
   * is said in a `context` event.
   */
  private async fitContext(signal: AbortSignal): Promise<void> {
    let provider: ProviderConfig;
    try {
      provider = this.deps.chat.provider();
    } catch {
      return; // the model call says why
    }
    if (this.context?.provider !== provider) {
      const said = await this.deps.chat.contextLength(provider, signal);
      this.context = { provider, tokens: said ?? DEFAULT_CONTEXT_TOKENS };
    }
    const { tokens } = this.context;
    const budget = promptBudget(tokens);
    const tools = this.tools().map((t) => t.spec);
    if (estimateTokens(this.messages, tools) <= budget) return;
    const dropped = dropOldResults(this.messages, tools, budget);
    if (dropped.length > 0) {
      this.recount();
      this.deps.logger.info(`agent ${this.short}: ${dropped.length} old tool result(s) dropped to fit the model's context (${tokens} tokens)`);
      this.emit({ type: 'context', message: `The conversation outgrew the model's context (${tokens} tokens): ${dropped.length} earlier tool result${dropped.length === 1 ? '' : 's'} replaced by a note.`, dropped });
    }
    if (estimateTokens(this.messages, tools) <= budget) return;
    const system = this.messages[0]!;
    const room = (budget - estimateTokens([system])) * CHARS_PER_TOKEN - SUMMARY_REQUEST.length - 200;
    const reply = await this.callModel(signal, [system, { role: 'user', content: `${conversationText(this.messages, Math.max(room, 1000))}\n\n${SUMMARY_REQUEST}` }]);
    if (!reply.ok || signal.aborted) return; // the next call fails on its own, or the turn was stopped
    // What the model works on now stays as it is: the last reply's calls and results, or the new message.
    const last = this.messages.at(-1)!;
    const from = last.role === 'tool' ? this.messages.findLastIndex((m) => m.role === 'assistant') : last.role === 'user' ? this.messages.findLastIndex((m) => m.role !== 'user') + 1 : this.messages.length;
    const tail = this.messages.slice(Math.max(from, 1));
    this.messages.splice(0, this.messages.length, system, { role: 'user', content: `${SUMMARY_NOTE}\n\n${reply.text}` }, ...tail);
    if (estimateTokens(this.messages, tools) > budget) dropOldResults(this.messages, tools, budget, false);
    this.recount();
    this.deps.logger.info(`agent ${this.short}: earlier steps summarised to fit the model's context (${tokens} tokens)`);
    this.emit({ type: 'context', message: `Earlier steps were summarised to fit the model's context (${tokens} tokens).`, summarised: true });
  }

  private recount(): void {
    this.chars = this.messages.reduce((n, m) => n + m.content.length + (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0), 0);
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
    if (!this.projectInstructions || this.messages[0]?.role !== 'system') return;
    const content = systemPrompt(this.deps.workspace, this.projectInstructions);
    this.chars += content.length - this.messages[0].content.length;
    this.messages[0] = { role: 'system', content };
    this.deps.logger.info(`agent ${this.short}: the system prompt carries ${this.projectInstructions.file}${this.projectInstructions.cut ? ' (cut)' : ''}`);
  }

  /** The built-in tools, then the host's (a host tool named like a built-in one is left out). */
  private tools(): readonly AgentTool[] {
    const extra = [...(this.deps.workspace.hostTools?.() ?? []), ...(this.deps.tools?.() ?? [])];
    if (extra.length === 0) return TOOLS;
    const names = new Set(TOOLS.map((t) => t.spec.name));
    return [...TOOLS, ...extra.filter((t) => !names.has(t.spec.name) && names.add(t.spec.name))];
  }

  private notifyIdle(): void {
    if (this.log.attached === 0) this.deps.push({ type: 'agent_idle', session: this.id });
  }

  /** One model request: the conversation with the tools, or (`summary`) other messages without tools, whose words are not shown. */
  private async callModel(signal: AbortSignal, summary?: ChatMessage[]): Promise<{ ok: true; text: string; calls: ToolCall[] } | { ok: false; message: string }> {
    let text = '';
    let unsent = '';
    const calls: ToolCall[] = [];
    const sink: ReplySink = {
      piece: (kind, piece) => {
        // Reasoning is the model's own scratch work: not part of what the agent says.
        if (kind !== 'text') return;
        text += piece;
        unsent += piece;
      },
      flush: () => {
        if (unsent === '' || summary) return;
        this.emit({ type: 'text', delta: unsent });
        unsent = '';
      },
      toolCall: (call) => {
        calls.push(call);
      },
      end: () => {},
    };
    let handle: ChatHandle;
    try {
      const provider = this.deps.chat.provider();
      handle = summary ? this.deps.chat.start(provider, summary, sink) : this.deps.chat.start(provider, this.messages, sink, { tools: this.tools().map((t) => t.spec), toolChoice: 'auto' });
    } catch (err) {
      if (err instanceof ChatError) return { ok: false, message: err.message };
      throw err;
    }
    this.model = handle;
    const onAbort = () => handle.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const ending = await handle.done;
      sink.flush();
      if (!ending.ok) return { ok: false, message: ending.message };
      if (ending.finish === 'length' && calls.length === 0) {
        this.emit({ type: 'error', message: 'The model stopped at its output token limit; its answer may be cut.' });
      }
      return { ok: true, text, calls };
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.model = undefined;
    }
  }

  private async runCall(call: ToolCall, callId: string, signal: AbortSignal): Promise<CallResult> {
    const { logger, limits, workspace } = this.deps;
    this.emit({ type: 'tool_call', callId, tool: call.name, input: call.arguments });
    const tools = this.tools();
    const tool: AgentTool | undefined = tools.find((t) => t.spec.name === call.name);
    if (!tool) {
      logger.info(`agent ${this.short}: ${call.name} refused (no such tool)`);
      return { ok: false, output: `There is no tool "${call.name}". The tools are: ${tools.map((t) => t.spec.name).join(', ')}.` };
    }
    let prepared: PreparedCall;
    try {
      prepared = await tool.prepare(call.arguments, { workspace, limits, signal });
    } catch (err) {
      const refusal = toolFailure(err, logger);
      logger.info(`agent ${this.short}: ${call.name} refused: ${refusal.output.split('\n')[0]}`);
      return refusal;
    }
    const subject = `${tool.approval === 'command' ? 'command' : tool.approval === 'tool' ? 'tool' : 'path'}=${JSON.stringify(prepared.subject)}`;
    if (this.gate.needsApproval(tool.approval, prepared.grantKey)) {
      const decision = await this.gate.ask(tool.approval, prepared.grantKey, {
        callId,
        tool: call.name,
        input: call.arguments,
        ...(prepared.diff !== undefined ? { diff: prepared.diff } : {}),
        ...(prepared.command !== undefined ? { command: prepared.command } : {}),
      });
      logger.info(`agent ${this.short}: ${call.name} ${subject} decision=${decision}`);
      const note = this.gate.takeNote(callId);
      if (decision === 'deny' || signal.aborted) {
        const output = signal.aborted ? NOT_RUN : `The user denied this. Nothing was changed or run.${note ? `\nThe user said: ${note}` : ''}`;
        return { ok: false, denied: true, output };
      }
    } else {
      logger.info(`agent ${this.short}: ${call.name} ${subject}${tool.approval === 'never' ? '' : ' decision=allowed_for_session'}`);
    }
    // An edit may rewrite what a granted command line runs (package.json's scripts, a Makefile):
    // it ends every command grant. A host's tool may write too; the relay cannot tell.
    if (tool.approval === 'edit' || !TOOLS.includes(tool)) this.gate.filesChange();
    try {
      const output = capResult(await prepared.run(), limits.maxResultBytes);
      // Every applied edit, asked or granted, carries its diff: each screen can show and revert it.
      if (tool.approval !== 'edit' || !prepared.diff) return { ok: true, output };
      this.applied.set(callId, { callId, path: prepared.subject, diff: prepared.diff, reverted: false });
      return { ok: true, output, diff: prepared.diff };
    } catch (err) {
      return toolFailure(err, logger);
    }
  }
}

function toolFailure(err: unknown, logger: Logger): { ok: false; output: string } {
  if (err instanceof WorkspaceError || err instanceof ArgumentError) return { ok: false, output: err.message };
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string') return { ok: false, output: `The desktop could not do it (${code}).` };
  logger.error(`agent: a tool failed unexpectedly: ${err instanceof Error ? err.name : typeof err}`);
  return { ok: false, output: 'The tool failed unexpectedly; see the DeskRelay log on the desktop.' };
}
