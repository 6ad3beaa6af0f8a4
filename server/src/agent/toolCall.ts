import type { Logger } from '../logger';
import type { AgentEvent } from '../protocol';
import type { ToolCall } from '../providers/types';
import type { ApprovalGate } from './gate';
import { capResult, type AgentLimits } from './limits';
import type { AppliedChange, CallResult } from './transcript';
import { ArgumentError, TOOLS, type AgentTool, type PreparedCall } from './tools';
import { WorkspaceError, type Workspace } from './workspace';

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
