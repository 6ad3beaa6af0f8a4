import { isAbsolute, relative, resolve, sep } from 'node:path';
import { client, PROTOCOL_VERSION, RequestError, type ClientConnection } from '@agentclientprotocol/sdk';
import type * as acp from '@agentclientprotocol/sdk';
import type { AgentChoice, AgentCommand, AgentPlanEntry } from '../../protocol';
import { unifiedDiff } from '../diff';
import type { Engine, EngineFactory, EngineHost, TurnOutcome } from '../engine';
import { EngineOptionError } from '../engine';
import type { Decision } from '../gate';
import type { ApprovalKind } from '../tools';
import { approvedEdit } from '../tools/approvedEdit';
import { checkCommandLine } from '../tools/runCommand';
import { WorkspaceError } from '../workspace';
import { AgentProcess, redactTokens, type AcpCommand } from './process';
import { Terminals } from './terminals';

/** An ACP agent as the catalog knows it. */
export interface AcpAgentSpec extends AcpCommand {
  id: string;
  name: string;
}

/** After session/cancel, how long the agent gets to end its turn before its process group is killed. */
export const CANCEL_GRACE_MS = 5000;
/** After the connection closed, how long to wait for the agent's exit (and its stderr). */
const CLOSE_TO_EXIT_MS = 3000;
/** How long starting the agent (initialize and session/new) may take. */
const START_TIMEOUT_MS = 60_000;
/**
 * Modes in which an agent acts without asking (Qwen Code's default `auto`, `yolo`, Claude Code's
 * `bypassPermissions`, Codex's `full-access`): a session starts in the agent's `default` instead,
 * and the phone cannot choose one (a mode that skips the agent's permission requests would skip
 * the user's approvals of what it runs itself).
 */
const UNASKING_MODES = /^(auto|yolo|auto[-_]?edit|bypass[-_]?permissions|full[-_]?access)$/i;

/** The capabilities DeskRelay offers every ACP agent: its files and terminals, through the session's Workspace and gate. */
export const CLIENT_CAPABILITIES: acp.ClientCapabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };

interface Call {
  callId: string;
  tool: string;
  kind?: acp.ToolKind | null;
  input: Record<string, unknown>;
  content: acp.ToolCallContent[];
  locations: acp.ToolCallLocation[];
  rawOutput?: unknown;
  finished: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

class Refusal extends Error {}

/** A session's ACP agent as an engine: DeskRelay is the ACP client. */
export function acpEngine(spec: AcpAgentSpec, env: () => NodeJS.ProcessEnv): EngineFactory {
  return (host) => new AcpEngine(spec, env, host);
}

class AcpEngine implements Engine {
  private proc: AgentProcess | undefined;
  private conn: ClientConnection | undefined;
  private sessionId: string | undefined;
  private starting: Promise<void> | undefined;
  private readonly calls = new Map<string, Call>();
  private readonly terminals: Terminals;
  private plan: AgentPlanEntry[] | undefined;
  private commands: AgentCommand[] | undefined;
  private modes: { current: string; modes: AgentChoice[] } | undefined;
  private models: { current: string; models: AgentChoice[] } | undefined;
  /**
   * What a permission the user allowed in this turn covers, one use each: a write of exactly the
   * text its card showed (path NUL text), a terminal of exactly its command line.
   */
  private readonly coveredWrites = new Map<string, number>();
  private readonly coveredCommands = new Map<string, number>();
  private turnSignal: AbortSignal | undefined;
  private text = '';
  private closed = false;

  constructor(
    private readonly spec: AcpAgentSpec,
    private readonly env: () => NodeJS.ProcessEnv,
    private readonly host: EngineHost,
  ) {
    this.terminals = new Terminals(host);
  }

  private get root(): string {
    return this.host.workspace.absolutePath!;
  }

  private log(line: string): void {
    this.host.logger.info(`agent ${this.host.sessionId.slice(0, 8)} (${this.spec.id}): ${line}`);
  }

  state(): Record<string, unknown> {
    return {
      ...(this.plan ? { plan: this.plan } : {}),
      ...(this.commands ? { commands: this.commands } : {}),
      ...(this.modes ? { modes: this.modes } : {}),
      ...(this.models ? { models: this.models } : {}),
    };
  }

  async turn(text: string, signal: AbortSignal): Promise<TurnOutcome> {
    if (signal.aborted) return { ok: true };
    try {
      await (this.starting ??= this.start());
    } catch (err) {
      this.proc?.kill();
      return { ok: false, ended: true, message: err instanceof Refusal ? err.message : this.failure(err, 'could not start') };
    }
    const proc = this.proc!;
    this.turnSignal = signal;
    let settled = false;
    const onAbort = () => {
      void this.conn?.agent.notify('session/cancel', { sessionId: this.sessionId! }).catch(() => {});
      const timer = setTimeout(() => {
        if (settled) return;
        this.log(`did not end its turn within ${CANCEL_GRACE_MS / 1000} s of the stop: ended`);
        proc.kill();
      }, CANCEL_GRACE_MS);
      timer.unref();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const crashed = proc.exited.then(() => 'crashed' as const);
      const answer = await Promise.race([this.conn!.agent.request('session/prompt', { sessionId: this.sessionId!, prompt: [{ type: 'text', text }] }), crashed]);
      if (answer === 'crashed') return { ok: false, ended: true, message: signal.aborted && proc.wasKilled ? this.killedMessage() : this.crashMessage() };
      if (answer.stopReason === 'max_tokens') this.host.emit({ type: 'error', message: `${this.spec.name} stopped at its output token limit; its answer may be cut.` });
      else if (answer.stopReason === 'max_turn_requests') this.host.emit({ type: 'error', message: `${this.spec.name} stopped at its own limit of model requests in one turn. Send a message to let it go on.` });
      else if (answer.stopReason === 'refusal') this.host.emit({ type: 'error', message: `${this.spec.name} refused to go on with this request.` });
      return { ok: true };
    } catch (err) {
      // A closed connection is told before the exit: wait for it, to say how the agent ended.
      if (this.conn?.signal.aborted && !proc.ended) await proc.endedWithin(CLOSE_TO_EXIT_MS);
      if (proc.ended || proc.wasKilled) return signal.aborted && proc.wasKilled ? { ok: false, ended: true, message: this.killedMessage() } : { ok: false, ended: true, message: this.crashMessage() };
      if (signal.aborted) return { ok: true };
      if (err instanceof RequestError && err.code === -32000) return { ok: false, message: this.loginMessage() };
      return { ok: false, message: this.failure(err, 'failed') };
    } finally {
      settled = true;
      signal.removeEventListener('abort', onAbort);
      this.turnSignal = undefined;
      this.flushText();
      this.coveredWrites.clear();
      this.coveredCommands.clear();
      // Calls the agent left open end with the turn, so no card spins for ever.
      for (const call of this.calls.values()) if (!call.finished) this.finish(call, signal.aborted ? 'Stopped by the user.' : 'The agent ended its turn without a result.', false, signal.aborted);
      // An id the agent uses again in a later turn is a new call with a new relay id (one approval, one call).
      this.calls.clear();
    }
  }

  async choose(what: 'mode' | 'model', id: string): Promise<void> {
    const offered = what === 'mode' ? this.modes : this.models;
    if (!offered || !this.conn || !this.sessionId) throw new EngineOptionError(`${this.spec.name} offers no ${what} to choose in this session.`);
    const list = what === 'mode' ? this.modes!.modes : this.models!.models;
    if (!list.some((c) => c.id === id)) throw new EngineOptionError(`"${what}" must be one of ${list.filter((c) => !c.unasked).map((c) => JSON.stringify(c.id)).join(', ')}.`);
    if (what === 'mode' && UNASKING_MODES.test(id)) throw new EngineOptionError(`In mode "${id}" ${this.spec.name} acts without asking; that can be chosen only at the desk.`);
    try {
      if (what === 'mode') await this.conn.agent.request('session/set_mode', { sessionId: this.sessionId, modeId: id });
      else await this.conn.agent.request('session/set_model', { sessionId: this.sessionId, modelId: id });
    } catch (err) {
      throw new EngineOptionError(`${this.spec.name} did not change its ${what}: ${err instanceof RequestError && err.code === -32601 ? 'it does not support that' : this.redact(err instanceof Error ? err.message : String(err))}.`);
    }
    if (what === 'mode') this.setModes(id, this.modes!.modes);
    else this.setModels(id, this.models!.models);
  }

  close(): void {
    this.closed = true;
    this.terminals.releaseAll();
    this.conn?.close();
    this.proc?.kill();
  }

  // ---- starting -------------------------------------------------------------------------

  private async start(): Promise<void> {
    if (this.closed) throw new Refusal('The session was closed.');
    const proc = new AgentProcess(this.spec, this.root, this.env());
    this.proc = proc;
    void proc.exited.then((how) => {
      if (how.error) this.log(how.error);
      else this.log(`ended (${how.signal ?? `exit code ${how.code}`})`);
      this.conn?.close();
      this.terminals.releaseAll();
      if (!proc.wasKilled && !this.closed && !this.turnSignal && this.sessionId) this.host.ended(this.crashMessage());
    });
    const app = client({ name: 'deskrelay' })
      .onNotification('session/update', ({ params }) => this.update(params))
      .onNotification('*', () => {})
      .onRequest('session/request_permission', ({ params, signal }) => this.permission(params, signal))
      .onRequest('fs/read_text_file', ({ params }) => this.readFile(params))
      .onRequest('fs/write_text_file', ({ params }) => this.writeFile(params))
      .onRequest('terminal/create', ({ params }) => this.createTerminal(params))
      .onRequest('terminal/output', ({ params }) => this.terminals.output(params.terminalId))
      .onRequest('terminal/wait_for_exit', ({ params }) => this.terminals.waitForExit(params.terminalId))
      .onRequest('terminal/kill', ({ params }) => this.terminals.kill(params.terminalId))
      .onRequest('terminal/release', ({ params }) => this.terminals.release(params.terminalId))
      .onRequest('*', ({ method }) => {
        throw RequestError.methodNotFound(method);
      });
    const conn = app.connect(proc.stream);
    this.conn = conn;
    const exitedEarly = proc.exited.then((how) => {
      throw new Refusal(`${this.spec.name} could not start: ${proc.startFailure(how)}.`);
    });
    exitedEarly.catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Refusal(`${this.spec.name} did not start within ${START_TIMEOUT_MS / 1000} s.`)), START_TIMEOUT_MS);
    });
    try {
      const init = await Promise.race([conn.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: CLIENT_CAPABILITIES, clientInfo: { name: 'deskrelay', version: '1' } }), exitedEarly, timeout]);
      let created: acp.NewSessionResponse;
      try {
        created = await Promise.race([conn.agent.request('session/new', { cwd: this.root, mcpServers: [] }), exitedEarly, timeout]);
      } catch (err) {
        if (err instanceof RequestError && err.code === -32000) throw new Refusal(this.loginMessage());
        throw err;
      }
      this.sessionId = created.sessionId;
      this.log(`started (${init.agentInfo?.name ?? this.spec.command} ${init.agentInfo?.version ?? ''}, protocol ${init.protocolVersion})`.replace(' ,', ','));
      if (created.modes) {
        const modes = created.modes.availableModes.map((m) => ({ id: m.id, name: m.name, ...(m.description ? { description: m.description } : {}), ...(UNASKING_MODES.test(m.id) ? { unasked: true as const } : {}) }));
        this.setModes(created.modes.currentModeId, modes);
        // A mode that writes without asking would bypass every approval: start in the agent's `default`.
        if (UNASKING_MODES.test(created.modes.currentModeId) && modes.some((m) => m.id === 'default')) {
          await conn.agent.request('session/set_mode', { sessionId: created.sessionId, modeId: 'default' });
          this.setModes('default', modes);
          this.log(`mode ${created.modes.currentModeId} changed to default (it asks before it writes)`);
        } else if (UNASKING_MODES.test(created.modes.currentModeId)) {
          this.host.emit({ type: 'error', message: `${this.spec.name} is in mode "${created.modes.currentModeId}", in which it acts without asking: what it does itself is not shown to you first.` });
        }
      }
      // `models` is ACP's unstable field (Claude Code, Gemini CLI offer it); session/set_model changes it.
      const models = (created as { models?: { currentModelId?: unknown; availableModels?: unknown } }).models;
      if (models && typeof models.currentModelId === 'string' && Array.isArray(models.availableModels)) {
        const list = models.availableModels.filter(isObject).flatMap((m) =>
          typeof m.modelId === 'string' ? [{ id: m.modelId, name: typeof m.name === 'string' ? m.name : m.modelId, ...(typeof m.description === 'string' ? { description: m.description } : {}) }] : [],
        );
        this.setModels(models.currentModelId, list);
      }
    } catch (err) {
      if (err instanceof Refusal) throw err;
      // A closed connection is told before the exit: say how it ended when it did.
      const how = await proc.endedWithin(CLOSE_TO_EXIT_MS);
      if (how) throw new Refusal(`${this.spec.name} could not start: ${proc.startFailure(how)}.`);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private setModes(current: string, modes: AgentChoice[]): void {
    this.modes = { current, modes };
    this.host.emit({ type: 'modes', current, modes });
  }

  private setModels(current: string, models: AgentChoice[]): void {
    this.models = { current, models };
    this.host.emit({ type: 'models', current, models });
  }

  // ---- what the agent tells ---------------------------------------------------------------

  private update(n: acp.SessionNotification): void {
    if (n.sessionId !== this.sessionId) return;
    const u = n.update;
    switch (u.sessionUpdate) {
      case 'agent_message_chunk':
        if (u.content.type === 'text' && u.content.text !== '') {
          this.text += u.content.text;
          this.host.emit({ type: 'text', delta: u.content.text });
        }
        return;
      case 'agent_thought_chunk':
        if (u.content.type === 'text' && u.content.text !== '') this.host.emit({ type: 'thinking', delta: u.content.text });
        return;
      case 'tool_call':
      case 'tool_call_update': {
        const call = this.callFor(u);
        if (u.status === 'completed' || u.status === 'failed') this.finish(call, undefined, u.status === 'completed');
        return;
      }
      case 'plan':
        this.plan = u.entries.map((e) => ({ content: e.content, status: e.status, ...(e.priority ? { priority: e.priority } : {}) }));
        this.host.emit({ type: 'plan', entries: this.plan });
        return;
      case 'available_commands_update':
        this.commands = u.availableCommands.map((c) => ({ name: c.name, description: c.description, ...(c.input && 'hint' in c.input && typeof c.input.hint === 'string' ? { hint: c.input.hint } : {}) }));
        this.host.emit({ type: 'commands', commands: this.commands });
        return;
      case 'current_mode_update':
        if (this.modes) this.setModes(u.currentModeId, this.modes.modes);
        return;
      default:
        return;
    }
  }

  /** The relay's call for an ACP tool call (new ones get a relay call id and a `tool_call` event), its fields merged in. */
  private callFor(u: acp.ToolCallUpdate): Call {
    let call = this.calls.get(u.toolCallId);
    if (!call) {
      this.flushText();
      call = { callId: this.host.gate.newCallId(), tool: u.title || u.kind || 'tool', kind: u.kind, input: isObject(u.rawInput) ? u.rawInput : {}, content: [], locations: [], finished: false };
      this.calls.set(u.toolCallId, call);
      this.host.emit({ type: 'tool_call', callId: call.callId, tool: call.tool, input: call.input });
      this.host.record({ role: 'assistant', text: '', toolCalls: [{ callId: call.callId, tool: call.tool, input: call.input }] });
    }
    if (u.kind) call.kind = u.kind;
    if (isObject(u.rawInput)) call.input = u.rawInput;
    if (u.content) call.content = u.content;
    if (u.locations) call.locations = u.locations;
    if (u.rawOutput !== undefined) call.rawOutput = u.rawOutput;
    return call;
  }

  private finish(call: Call, output: string | undefined, ok: boolean, denied = false): void {
    if (call.finished) return;
    call.finished = true;
    const text = output ?? (this.render(call) || (ok ? 'Done.' : 'Failed.'));
    this.host.emit({ type: 'tool_result', callId: call.callId, ok, output: text, ...(denied ? { denied } : {}) });
    this.host.record({ role: 'tool', callId: call.callId, tool: call.tool, ok, output: text, ...(denied ? { denied } : {}) });
  }

  /** A tool call's content as text: its words, each diff as a unified diff, each terminal's output. */
  private render(call: Call): string {
    const parts: string[] = [];
    for (const c of call.content) {
      if (c.type === 'content') {
        if (c.content.type === 'text') parts.push(c.content.text);
      } else if (c.type === 'diff') parts.push(unifiedDiff(this.shown(c.path), c.oldText ?? undefined, c.newText));
      else if (c.type === 'terminal') parts.push(this.terminals.shown(c.terminalId));
    }
    if (parts.length === 0 && call.rawOutput !== undefined) parts.push(typeof call.rawOutput === 'string' ? call.rawOutput : JSON.stringify(call.rawOutput));
    return parts.join('\n');
  }

  private flushText(): void {
    if (this.text === '') return;
    this.host.record({ role: 'assistant', text: this.text, toolCalls: [] });
    this.text = '';
  }

  // ---- what the agent asks ----------------------------------------------------------------

  /** session/request_permission: an approval through the gate; the decision picks the option by its kind, never its id. */
  private async permission(params: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse> {
    const call = this.callFor(params.toolCall);
    const byKind = (...kinds: acp.PermissionOptionKind[]) => kinds.map((k) => params.options.find((o) => o.kind === k)).find((o) => o !== undefined);
    const selected = (o: acp.PermissionOption | undefined): acp.RequestPermissionResponse => (o ? { outcome: { outcome: 'selected', optionId: o.optionId } } : { outcome: { outcome: 'cancelled' } });
    const diffs = call.content.filter((c): c is acp.Diff & { type: 'diff' } => c.type === 'diff');
    const command = typeof call.input.command === 'string' ? call.input.command : Array.isArray(call.input.command) && call.input.command.every((p) => typeof p === 'string') ? call.input.command.join(' ') : undefined;
    let kind: ApprovalKind;
    let key: string | undefined;
    let writes: string[] = [];
    const shown: { diff?: string; command?: string } = {};
    if (diffs.length > 0 || call.kind === 'edit' || call.kind === 'delete' || call.kind === 'move') {
      kind = 'edit';
      if (diffs.length > 0) {
        const edits = await Promise.all(diffs.map((d) => this.edit(d, call.input.replace_all === true)));
        shown.diff = edits.map((e) => e.diff).join('');
        writes = edits.flatMap((e) => (e.after !== undefined ? [e.key] : []));
      }
    } else if (call.kind === 'execute' && command !== undefined) {
      try {
        checkCommandLine(command);
      } catch (err) {
        // A card cannot show it as it would run: refused before anyone is asked.
        this.host.emit({ type: 'error', message: `${this.spec.name} asked to run a command the phone cannot show whole; it was refused. ${(err as Error).message}` });
        return selected(byKind('reject_once', 'reject_always'));
      }
      kind = 'command';
      key = command;
      shown.command = command;
    } else {
      kind = 'tool';
      key = call.tool;
    }
    let decision: Decision;
    if (!this.host.gate.needsApproval(kind, key)) {
      decision = 'allow';
      this.log(`${call.tool} decision=allowed_for_session`);
    } else {
      decision = await this.host.gate.ask(kind, key, { callId: call.callId, tool: call.tool, input: call.input, ...shown });
      this.log(`${call.tool} ${kind} decision=${decision}`);
    }
    if (signal.aborted || this.turnSignal?.aborted) return { outcome: { outcome: 'cancelled' } };
    if (decision === 'deny') return selected(byKind('reject_once', 'reject_always'));
    const option = decision === 'allow_session' ? byKind('allow_always', 'allow_once') : byKind('allow_once');
    if (option) {
      // What the agent will now ask DeskRelay to do for this call is what the user just allowed.
      for (const w of writes) this.cover(this.coveredWrites, w);
      if (command !== undefined) this.cover(this.coveredCommands, command);
    } else {
      this.host.emit({ type: 'error', message: `${this.spec.name} offered no option to allow this ${decision === 'allow_session' ? 'for the session' : 'once'}; it was not allowed.` });
    }
    return selected(option);
  }

  /**
   * A diff of a permission as its card shows it: against the file as it is now when the agent's
   * diff is a whole new text (`oldText` null) or a piece of it found there (an edit's old and new
   * strings), so the card shows the file's change; `key` names the write it would be.
   */
  private async edit(d: acp.Diff, all: boolean): Promise<{ diff: string; after?: string; key: string }> {
    const shownPath = this.shown(d.path);
    let before: string | undefined;
    try {
      before = await this.host.workspace.readIfExists(this.rel(resolve(this.root, d.path)));
    } catch {
      // Outside the folder or denied: its write will be refused; the card shows the agent's diff.
      return { diff: unifiedDiff(shownPath, d.oldText ?? undefined, d.newText), key: '' };
    }
    let after: string | undefined;
    if (d.oldText == null || d.oldText === '') after = d.newText;
    else if (before !== undefined && before.includes(d.oldText)) after = all ? before.split(d.oldText).join(d.newText) : before.replace(d.oldText, () => d.newText);
    if (after === undefined) return { diff: unifiedDiff(shownPath, d.oldText ?? undefined, d.newText), key: '' };
    return { diff: unifiedDiff(shownPath, before, after), after, key: `${resolve(this.root, d.path)}\0${after}` };
  }

  private cover(map: Map<string, number>, key: string): void {
    map.set(key, (map.get(key) ?? 0) + 1);
  }

  private covers(map: Map<string, number>, key: string): boolean {
    const n = map.get(key) ?? 0;
    if (n === 0) return false;
    if (n === 1) map.delete(key);
    else map.set(key, n - 1);
    return true;
  }

  /** An ACP path (absolute) as a folder-relative one; outside the folder is refused. */
  private rel(path: string): string {
    if (typeof path !== 'string' || !isAbsolute(path)) throw RequestError.invalidParams(undefined, `"path" must be an absolute path inside ${this.root}`);
    const rel = relative(this.root, path);
    if (rel === '' || outside(rel)) throw new RequestError(-32602, `${path} is outside the session's folder; DeskRelay reads and writes only inside ${this.root}.`);
    return rel.split('\\').join('/');
  }

  /** A path as cards show it: folder-relative when inside. */
  private shown(path: string): string {
    const rel = relative(this.root, resolve(this.root, path));
    return outside(rel) ? path : rel.split('\\').join('/');
  }

  /** fs/read_text_file: the Workspace's read (confinement, deny list); a missing file is empty text (Gemini CLI then creates it). */
  private async readFile(params: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
    const rel = this.rel(params.path);
    let text: string | undefined;
    try {
      text = await this.host.workspace.readIfExists(rel);
    } catch (err) {
      throw this.asRequestError(err);
    }
    this.log(`fs/read_text_file path=${JSON.stringify(rel)}${text === undefined ? ' (missing)' : ''}`);
    let content = text ?? '';
    if (params.line != null || params.limit != null) {
      const lines = content.split('\n');
      const from = Math.max(0, (params.line ?? 1) - 1);
      content = lines.slice(from, params.limit != null ? from + params.limit : undefined).join('\n');
    }
    return { content };
  }

  /** fs/write_text_file: asks first (a diff card) unless a permission the user allowed, or an edit grant, covers it. */
  private async writeFile(params: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse> {
    const rel = this.rel(params.path);
    const ctx = { workspace: this.host.workspace, limits: this.host.limits, signal: this.turnSignal ?? new AbortController().signal };
    try {
      const before = await this.host.workspace.readIfExists(rel);
      const prepared = await approvedEdit(ctx, rel, before, params.content, before === undefined ? `Created ${rel}.` : `Wrote ${rel}.`);
      const covered = this.covers(this.coveredWrites, `${resolve(this.root, rel)}\0${params.content}`) || !this.host.gate.needsApproval('edit');
      const asked = covered ? undefined : await this.askOwn('write_file', { path: rel }, 'edit', undefined, { diff: prepared.diff });
      if (asked && !asked.allowed) throw new RequestError(-32603, asked.output);
      this.host.gate.filesChange();
      const done = await prepared.run();
      this.log(`fs/write_text_file path=${JSON.stringify(rel)}${covered ? ' (allowed)' : ''}`);
      if (asked) this.finishOwn(asked.callId, 'write_file', true, done);
      return {};
    } catch (err) {
      throw this.asRequestError(err);
    }
  }

  /** terminal/create: the one-line rule, the folder, an approval unless granted or covered, then the Workspace's runCommand. */
  private async createTerminal(params: acp.CreateTerminalRequest): Promise<acp.CreateTerminalResponse> {
    const line = params.args && params.args.length > 0 ? [params.command, ...params.args.map(shellQuote)].join(' ') : params.command;
    try {
      checkCommandLine(line);
    } catch (err) {
      throw new RequestError(-32602, (err as Error).message);
    }
    if (params.cwd != null && resolve(params.cwd) !== resolve(this.root)) throw new RequestError(-32602, `Terminals run in the session's folder (${this.root}); "cwd" was ${params.cwd}.`);
    const covered = this.covers(this.coveredCommands, line) || !this.host.gate.needsApproval('command', line);
    const asked = covered ? undefined : await this.askOwn('run_command', { command: line }, 'command', line, { command: line });
    if (asked && !asked.allowed) throw new RequestError(-32603, asked.output);
    this.log(`terminal/create command=${JSON.stringify(line)}${covered ? ' (allowed)' : ''}`);
    const id = this.terminals.start(line, this.turnSignal, params.outputByteLimit ?? undefined, asked ? (ok, output) => this.finishOwn(asked.callId, 'run_command', ok, output) : undefined);
    return { terminalId: id };
  }

  /** A call of DeskRelay's own kind (a write, a command) the agent asked for: its card, its approval. */
  private async askOwn(tool: string, input: Record<string, unknown>, kind: ApprovalKind, key: string | undefined, shown: { diff?: string; command?: string }): Promise<{ callId: string; allowed: boolean; output: string }> {
    const callId = this.host.gate.newCallId();
    this.host.emit({ type: 'tool_call', callId, tool, input });
    this.host.record({ role: 'assistant', text: '', toolCalls: [{ callId, tool, input }] });
    const decision = await this.host.gate.ask(kind, key, { callId, tool, input, ...shown });
    this.log(`${tool} ${kind} decision=${decision}`);
    if (decision !== 'deny' && !this.turnSignal?.aborted) return { callId, allowed: true, output: '' };
    const output = this.turnSignal?.aborted ? 'Not run: the user stopped the agent.' : 'The user denied this. Nothing was changed or run.';
    this.finishOwn(callId, tool, false, output, true);
    return { callId, allowed: false, output };
  }

  private finishOwn(callId: string, tool: string, ok: boolean, output: string, denied = false): void {
    this.host.emit({ type: 'tool_result', callId, ok, output, ...(denied ? { denied } : {}) });
    this.host.record({ role: 'tool', callId, tool, ok, output, ...(denied ? { denied } : {}) });
  }

  private asRequestError(err: unknown): RequestError {
    if (err instanceof RequestError) return err;
    if (err instanceof WorkspaceError) return new RequestError(-32602, err.message);
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    return new RequestError(-32603, typeof code === 'string' ? `The desktop could not do it (${code}).` : 'The desktop could not do it.');
  }

  // ---- messages ---------------------------------------------------------------------------

  private redact(text: string): string {
    return redactTokens(text, Object.values(this.spec.env));
  }

  private loginMessage(): string {
    return `Log in to ${this.spec.name} at the desk (run ${[this.spec.command, ...this.spec.args].join(' ').replace(/ --?(experimental-)?acp\b| acp$/, '')} there and sign in), then start a new session. The phone never asks for its secrets.`;
  }

  private crashMessage(what = 'ended unexpectedly'): string {
    const proc = this.proc;
    const code = proc?.child.exitCode;
    const sig = proc?.child.signalCode;
    const how = sig ? `signal ${sig}` : code !== null && code !== undefined ? `exit code ${code}` : 'no exit code';
    const tail = proc?.stderrTail() ?? '';
    return `${this.spec.name} ${what} (${how}).${tail ? ` Its last words:\n${tail}` : ''}`;
  }

  private killedMessage(): string {
    return `${this.spec.name} did not stop within ${CANCEL_GRACE_MS / 1000} s and was ended with everything it started; start a new session to go on.`;
  }

  private failure(err: unknown, what: string): string {
    if (err instanceof Refusal) return err.message;
    const message = err instanceof Error ? err.message : String(err);
    return `${this.spec.name} ${what}: ${this.redact(message)}`;
  }
}

/** A path relative to the folder that leads out of it (a file named `..x` inside is not). */
const outside = (rel: string) => rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);

/** A word for /bin/sh: left as is when plain, else single-quoted. */
function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
