import { resolve } from 'node:path';
import { client, PROTOCOL_VERSION, RequestError, type ClientConnection } from '@agentclientprotocol/sdk';
import type * as acp from '@agentclientprotocol/sdk';
import type { AgentChoice, AgentCommand, AgentPlanEntry } from '../../protocol';
import type { Engine, EngineFactory, EngineHost, TurnOutcome } from '../engine';
import { EngineOptionError } from '../engine';
import type { ApprovalKind } from '../tools';
import { approvedWrite } from '../tools/edits';
import { checkCommandLine } from '../tools/runCommand';
import { AcpCalls, isObject } from './calls';
import { AcpPaths, shellQuote } from './paths';
import { askPermission, Covered, type PermissionContext } from './permission';
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

const EARLIER_HEAD = 'This conversation goes on from an earlier session with you that could not be reloaded. What was said and done in it:';
const EARLIER_END = 'That was the earlier session. The user now says:';

/** The capabilities DeskRelay offers every ACP agent: its files and terminals, through the session's Workspace and gate. */
export const CLIENT_CAPABILITIES: acp.ClientCapabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };

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
  private readonly terminals: Terminals;
  private readonly paths: AcpPaths;
  private readonly calls: AcpCalls;
  private plan: AgentPlanEntry[] | undefined;
  private commands: AgentCommand[] | undefined;
  private modes: { current: string; modes: AgentChoice[] } | undefined;
  private models: { current: string; models: AgentChoice[] } | undefined;
  /** What permissions the user allowed in this turn cover. */
  private readonly coveredWrites = new Covered();
  private readonly coveredCommands = new Covered();
  private turnSignal: AbortSignal | undefined;
  /** A kept session's earlier transcript, for the first prompt of the new ACP session that goes on from it. */
  private earlier: string | undefined;
  private closed = false;

  constructor(
    private readonly spec: AcpAgentSpec,
    private readonly env: () => NodeJS.ProcessEnv,
    private readonly host: EngineHost,
  ) {
    this.terminals = new Terminals(host);
    this.paths = new AcpPaths(host.workspace.absolutePath!);
    this.calls = new AcpCalls(host, this.paths, this.terminals);
  }

  private get root(): string {
    return this.paths.root;
  }

  private log(line: string): void {
    this.host.logger.info(`agent ${this.host.sessionId.slice(0, 8)} (${this.spec.id}): ${line}`);
  }

  kept(): Record<string, unknown> | undefined {
    // Restored and not started yet: what it was, so a second restart can still load it.
    return this.sessionId ? { sessionId: this.sessionId } : this.host.resumed?.state;
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
      const prompt = this.earlier === undefined ? text : `${EARLIER_HEAD}\n\n${this.earlier}\n\n${EARLIER_END}\n\n${text}`;
      this.earlier = undefined;
      const answer = await Promise.race([this.conn!.agent.request('session/prompt', { sessionId: this.sessionId!, prompt: [{ type: 'text', text: prompt }] }), crashed]);
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
      this.coveredWrites.clear();
      this.coveredCommands.clear();
      this.calls.endTurn(signal.aborted);
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

  async close(): Promise<void> {
    this.closed = true;
    this.terminals.releaseAll();
    this.conn?.close();
    await this.proc?.stop();
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
      .onRequest('session/request_permission', ({ params, signal }) => askPermission(this.permissionContext, params, signal))
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
      const loaded = await this.load(conn, init, (p) => Promise.race([p, exitedEarly, timeout]));
      let created: acp.NewSessionResponse;
      try {
        created = loaded ?? (await Promise.race([conn.agent.request('session/new', { cwd: this.root, mcpServers: [] }), exitedEarly, timeout]));
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

  /**
   * A kept session after a restart: `session/load` of the agent's own session when it offers
   * that (what it replays meanwhile is not told again: no session id is set yet); else, in
   * the new session it starts, the first prompt carries the earlier transcript, and the phone
   * is told so.
   */
  private async load(conn: ClientConnection, init: acp.InitializeResponse, bounded: <T>(p: Promise<T>) => Promise<T>): Promise<acp.NewSessionResponse | undefined> {
    const resumed = this.host.resumed;
    if (!resumed) return undefined;
    const old = resumed.state?.sessionId;
    let why = 'it does not offer to load one';
    if (typeof old === 'string' && init.agentCapabilities?.loadSession === true) {
      try {
        const loaded = await bounded(conn.agent.request('session/load', { sessionId: old, cwd: this.root, mcpServers: [] }));
        this.log(`session ${old} loaded`);
        return { ...loaded, sessionId: old };
      } catch (err) {
        if (err instanceof Refusal) throw err;
        why = `it answered ${this.redact(err instanceof Error ? err.message : String(err))}`;
      }
    } else if (typeof old !== 'string') {
      why = 'it had not started one';
    }
    const earlier = resumed.earlier();
    if (earlier !== '') {
      this.earlier = earlier;
      this.host.emit({ type: 'context', message: `${this.spec.name} could not reload its earlier session: ${why}; the earlier transcript was given to it with your message.` });
    }
    this.log(`earlier session not loaded (${why})`);
    return undefined;
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
        if (u.content.type === 'text' && u.content.text !== '') this.calls.said(u.content.text);
        return;
      case 'agent_thought_chunk':
        if (u.content.type === 'text' && u.content.text !== '') this.host.emit({ type: 'thinking', delta: u.content.text });
        return;
      case 'tool_call':
      case 'tool_call_update': {
        const call = this.calls.callFor(u);
        if (u.status === 'completed' || u.status === 'failed') this.calls.finish(call, undefined, u.status === 'completed');
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

  // ---- what the agent asks ----------------------------------------------------------------

  private get permissionContext(): PermissionContext {
    return { host: this.host, name: this.spec.name, paths: this.paths, calls: this.calls, log: (l) => this.log(l), stopped: () => this.turnSignal?.aborted === true, writes: this.coveredWrites, commands: this.coveredCommands };
  }

  /** fs/read_text_file: the Workspace's read (confinement, deny list); a missing file is empty text (Gemini CLI then creates it). */
  private async readFile(params: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
    const rel = this.paths.rel(params.path);
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
    const rel = this.paths.rel(params.path);
    const ctx = { workspace: this.host.workspace, limits: this.host.limits, signal: this.turnSignal ?? new AbortController().signal };
    try {
      const prepared = await approvedWrite(ctx, rel, params.content);
      const covered = this.coveredWrites.covers(`${this.paths.abs(rel)}\0${params.content}`) || !this.host.gate.needsApproval('edit');
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
    const covered = this.coveredCommands.covers(line) || !this.host.gate.needsApproval('command', line);
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
