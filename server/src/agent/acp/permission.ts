import type * as acp from '@agentclientprotocol/sdk';
import { unifiedDiff } from '../changes';
import type { EngineHost } from '../engine';
import type { Decision } from '../gate';
import type { ApprovalKind } from '../tools';
import { checkCommandLine } from '../tools/runCommand';
import type { AcpCalls } from './calls';
import type { AcpPaths } from './paths';

/**
 * What permissions the user allowed in this turn cover, one use each: a write of exactly the
 * text its card showed (path NUL text), a terminal of exactly its command line.
 */
export class Covered {
  private readonly map = new Map<string, number>();

  cover(key: string): void {
    this.map.set(key, (this.map.get(key) ?? 0) + 1);
  }

  /** True (and one use taken) when an allowed permission covers `key`. */
  covers(key: string): boolean {
    const n = this.map.get(key) ?? 0;
    if (n === 0) return false;
    if (n === 1) this.map.delete(key);
    else this.map.set(key, n - 1);
    return true;
  }

  clear(): void {
    this.map.clear();
  }
}

export interface PermissionContext {
  host: EngineHost;
  /** The agent's name, as messages say it. */
  name: string;
  paths: AcpPaths;
  calls: AcpCalls;
  log(line: string): void;
  /** The turn was stopped. */
  stopped(): boolean;
  writes: Covered;
  commands: Covered;
}

/** session/request_permission: an approval through the gate; the decision picks the option by its kind, never its id. */
export async function askPermission(ctx: PermissionContext, params: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse> {
  const call = ctx.calls.callFor(params.toolCall);
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
      const edits = await Promise.all(diffs.map((d) => shownEdit(ctx, d, call.input.replace_all === true)));
      shown.diff = edits.map((e) => e.diff).join('');
      writes = edits.flatMap((e) => (e.after !== undefined ? [e.key] : []));
    }
  } else if (call.kind === 'execute' && command !== undefined) {
    try {
      checkCommandLine(command);
    } catch (err) {
      // A card cannot show it as it would run: refused before anyone is asked.
      ctx.host.emit({ type: 'error', message: `${ctx.name} asked to run a command the phone cannot show whole; it was refused. ${(err as Error).message}` });
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
  if (!ctx.host.gate.needsApproval(kind, key)) {
    decision = 'allow';
    ctx.log(`${call.tool} decision=allowed_for_session`);
  } else {
    decision = await ctx.host.gate.ask(kind, key, { callId: call.callId, tool: call.tool, input: call.input, ...shown });
    ctx.log(`${call.tool} ${kind} decision=${decision}`);
  }
  if (signal.aborted || ctx.stopped()) return { outcome: { outcome: 'cancelled' } };
  if (decision === 'deny') return selected(byKind('reject_once', 'reject_always'));
  const option = decision === 'allow_session' ? byKind('allow_always', 'allow_once') : byKind('allow_once');
  if (option) {
    // What the agent will now ask DeskRelay to do for this call is what the user just allowed.
    for (const w of writes) ctx.writes.cover(w);
    if (command !== undefined) ctx.commands.cover(command);
  } else {
    ctx.host.emit({ type: 'error', message: `${ctx.name} offered no option to allow this ${decision === 'allow_session' ? 'for the session' : 'once'}; it was not allowed.` });
  }
  return selected(option);
}

/**
 * A diff of a permission as its card shows it: against the file as it is now when the agent's
 * diff is a whole new text (`oldText` null) or a piece of it found there (an edit's old and new
 * strings), so the card shows the file's change; `key` names the write it would be.
 */
async function shownEdit(ctx: PermissionContext, d: acp.Diff, all: boolean): Promise<{ diff: string; after?: string; key: string }> {
  const shownPath = ctx.paths.shown(d.path);
  let before: string | undefined;
  try {
    before = await ctx.host.workspace.readIfExists(ctx.paths.rel(ctx.paths.abs(d.path)));
  } catch {
    // Outside the folder or denied: its write will be refused; the card shows the agent's diff.
    return { diff: unifiedDiff(shownPath, d.oldText ?? undefined, d.newText), key: '' };
  }
  let after: string | undefined;
  if (d.oldText == null || d.oldText === '') after = d.newText;
  else if (before !== undefined && before.includes(d.oldText)) after = all ? before.split(d.oldText).join(d.newText) : before.replace(d.oldText, () => d.newText);
  if (after === undefined) return { diff: unifiedDiff(shownPath, d.oldText ?? undefined, d.newText), key: '' };
  return { diff: unifiedDiff(shownPath, before, after), after, key: `${ctx.paths.abs(d.path)}\0${after}` };
}
