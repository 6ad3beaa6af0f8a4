/**
 * One step of a turn (a turn takes at most `limits.maxSteps`): the model is called with the
 * conversation, then each tool call it asked for is run, asked first where the policy says so,
 * its result capped.
 */
import type { ChatHandle, ChatService, ReplySink } from '../chat/service';
import { ChatError } from '../chat/errors';
import type { Logger } from '../logger';
import type { AgentEvent } from '../protocol';
import { ArgumentError } from '../providers/framing';
import type { ChatMessage, ToolCall, ToolSpec } from '../providers/types';
import type { ApprovalGate } from './gate';
import type { AgentLimits } from './limits';
import type { AppliedChange, CallResult } from './transcript';
import { TOOLS, type AgentTool, type PreparedCall } from './tools';
import { WorkspaceError, type Workspace } from './workspace';

export type ModelReply = { ok: true; text: string; calls: ToolCall[] } | { ok: false; message: string };

export interface ModelCallDeps {
  chat: ChatService;
  emit(event: AgentEvent): void;
  /** The request under way (a stop aborts it), then undefined when it ended. */
  running(handle: ChatHandle | undefined): void;
}

/**
 * One model request: the conversation with the tools, its words shown as they come; or, without
 * `tools` (a summary), other messages whose words are not shown.
 */
export async function callModel(deps: ModelCallDeps, signal: AbortSignal, messages: ChatMessage[], tools?: ToolSpec[]): Promise<ModelReply> {
  const quiet = tools === undefined;
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
      if (unsent === '' || quiet) return;
      deps.emit({ type: 'text', delta: unsent });
      unsent = '';
    },
    toolCall: (call) => {
      calls.push(call);
    },
    end: () => {},
  };
  let handle: ChatHandle;
  try {
    const provider = deps.chat.provider();
    handle = quiet ? deps.chat.start(provider, messages, sink) : deps.chat.start(provider, messages, sink, { tools, toolChoice: 'auto' });
  } catch (err) {
    if (err instanceof ChatError) return { ok: false, message: err.message };
    throw err;
  }
  deps.running(handle);
  const onAbort = () => handle.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const ending = await handle.done;
    sink.flush();
    if (!ending.ok) return { ok: false, message: ending.message };
    if (ending.finish === 'length' && calls.length === 0) {
      deps.emit({ type: 'error', message: 'The model stopped at its output token limit; its answer may be cut.' });
    }
    return { ok: true, text, calls };
  } finally {
    signal.removeEventListener('abort', onAbort);
    deps.running(undefined);
  }
}

export const NOT_RUN = 'Not run: the user stopped the agent.';

export interface ToolCallDeps {
  workspace: Workspace;
  limits: AgentLimits;
  logger: Logger;
  gate: ApprovalGate;
  /** The session's short id, for the log. */
  short: string;
  emit(event: AgentEvent): void;
  /** The tools offered at this step. */
  tools: readonly AgentTool[];
  /** An edit was applied (the desk's Changes list, the user's revert). */
  applied(change: AppliedChange): void;
}

/** One call the model made: its card, its approval where the policy asks, then the tool, its result capped. */
export async function runToolCall(deps: ToolCallDeps, call: ToolCall, callId: string, signal: AbortSignal): Promise<CallResult> {
  const { logger, limits, workspace, gate, short, tools } = deps;
  deps.emit({ type: 'tool_call', callId, tool: call.name, input: call.arguments });
  const tool: AgentTool | undefined = tools.find((t) => t.spec.name === call.name);
  if (!tool) {
    logger.info(`agent ${short}: ${call.name} refused (no such tool)`);
    return { ok: false, output: `There is no tool "${call.name}". The tools are: ${tools.map((t) => t.spec.name).join(', ')}.` };
  }
  let prepared: PreparedCall;
  try {
    prepared = await tool.prepare(call.arguments, { workspace, limits, signal });
  } catch (err) {
    const refusal = toolFailure(err, logger);
    logger.info(`agent ${short}: ${call.name} refused: ${refusal.output.split('\n')[0]}`);
    return refusal;
  }
  const subject = `${tool.approval === 'command' ? 'command' : tool.approval === 'tool' ? 'tool' : 'path'}=${JSON.stringify(prepared.subject)}`;
  if (gate.needsApproval(tool.approval, prepared.grantKey)) {
    const decision = await gate.ask(tool.approval, prepared.grantKey, {
      callId,
      tool: call.name,
      input: call.arguments,
      ...(prepared.diff !== undefined ? { diff: prepared.diff } : {}),
      ...(prepared.command !== undefined ? { command: prepared.command } : {}),
    });
    logger.info(`agent ${short}: ${call.name} ${subject} decision=${decision}`);
    const note = gate.takeNote(callId);
    if (decision === 'deny' || signal.aborted) {
      const output = signal.aborted ? NOT_RUN : `The user denied this. Nothing was changed or run.${note ? `\nThe user said: ${note}` : ''}`;
      return { ok: false, denied: true, output };
    }
  } else {
    logger.info(`agent ${short}: ${call.name} ${subject}${tool.approval === 'never' ? '' : ' decision=allowed_for_session'}`);
  }
  // An edit may rewrite what a granted command line runs (package.json's scripts, a Makefile):
  // it ends every command grant. A host's tool may write too; the relay cannot tell.
  if (tool.approval === 'edit' || !TOOLS.includes(tool)) gate.filesChange();
  try {
    const output = capResult(await prepared.run(), limits.maxResultBytes);
    // Every applied edit, asked or granted, carries its diff: each screen can show and revert it.
    if (tool.approval !== 'edit' || !prepared.diff) return { ok: true, output };
    deps.applied({ callId, path: prepared.subject, diff: prepared.diff, reverted: false });
    return { ok: true, output, diff: prepared.diff };
  } catch (err) {
    return toolFailure(err, logger);
  }
}

/** A command the user asked for (Merge), approved: its output and how it ended, capped. */
export async function runAskedCommand(where: Workspace, command: string, limits: AgentLimits, signal: AbortSignal): Promise<CallResult> {
  const ran = await where.runCommand(command, { signal, timeoutMs: limits.commandTimeoutMs, maxOutputBytes: limits.maxCommandOutputBytes });
  const ok = ran.exitCode === 0 && !ran.timedOut && !ran.stopped;
  return { ok, output: capResult(`${ran.output}${ran.output.endsWith('\n') || ran.output === '' ? '' : '\n'}[exit code ${ran.exitCode ?? 'none'}${ran.timedOut ? ', timed out' : ''}${ran.stopped ? ', stopped' : ''}]`, limits.maxResultBytes) };
}

/** The built-in tools, then the host's (a host tool named like a built-in one is left out). */
export function offeredTools(extra: readonly AgentTool[]): readonly AgentTool[] {
  if (extra.length === 0) return TOOLS;
  const names = new Set(TOOLS.map((t) => t.spec.name));
  return [...TOOLS, ...extra.filter((t) => !names.has(t.spec.name) && names.add(t.spec.name))];
}

function toolFailure(err: unknown, logger: Logger): { ok: false; output: string } {
  if (err instanceof WorkspaceError || err instanceof ArgumentError) return { ok: false, output: err.message };
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string') return { ok: false, output: `The desktop could not do it (${code}).` };
  logger.error(`agent: a tool failed unexpectedly: ${err instanceof Error ? err.name : typeof err}`);
  return { ok: false, output: 'The tool failed unexpectedly; see the DeskRelay log on the desktop.' };
}

/** `text` cut to `maxBytes` of UTF-8 (never inside a character), with a note saying so. */
export function capResult(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString('utf8')}\n[cut: the result was ${bytes.length} bytes; the agent gets at most ${maxBytes}. Ask for less: a line range, a narrower path or pattern.]`;
}
