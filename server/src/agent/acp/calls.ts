import type * as acp from '@agentclientprotocol/sdk';
import { unifiedDiff } from '../changes';
import type { EngineHost } from '../engine';
import type { AcpPaths } from './paths';
import type { Terminals } from './terminals';

/** One ACP tool call as the relay knows it: its relay call id and what the agent told of it. */
export interface Call {
  callId: string;
  tool: string;
  kind?: acp.ToolKind | null;
  input: Record<string, unknown>;
  content: acp.ToolCallContent[];
  locations: acp.ToolCallLocation[];
  rawOutput?: unknown;
  finished: boolean;
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The agent's tool calls and words in one turn, as the session's events and transcript: each
 * ACP call gets a relay call id (its card), its result when it ends; words between calls are
 * one transcript entry.
 */
export class AcpCalls {
  private readonly calls = new Map<string, Call>();
  private text = '';

  constructor(
    private readonly host: EngineHost,
    private readonly paths: AcpPaths,
    private readonly terminals: Terminals,
  ) {}

  said(text: string): void {
    this.text += text;
    this.host.emit({ type: 'text', delta: text });
  }

  /** The relay's call for an ACP tool call (new ones get a relay call id and a `tool_call` event), its fields merged in. */
  callFor(u: acp.ToolCallUpdate): Call {
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

  finish(call: Call, output: string | undefined, ok: boolean, denied = false): void {
    if (call.finished) return;
    call.finished = true;
    const text = output ?? (this.render(call) || (ok ? 'Done.' : 'Failed.'));
    this.host.emit({ type: 'tool_result', callId: call.callId, ok, output: text, ...(denied ? { denied } : {}) });
    this.host.record({ role: 'tool', callId: call.callId, tool: call.tool, ok, output: text, ...(denied ? { denied } : {}) });
  }

  /** The turn ended: its words kept, calls the agent left open ended (no card spins for ever). */
  endTurn(stopped: boolean): void {
    this.flushText();
    for (const call of this.calls.values()) if (!call.finished) this.finish(call, stopped ? 'Stopped by the user.' : 'The agent ended its turn without a result.', false, stopped);
    // An id the agent uses again in a later turn is a new call with a new relay id (one approval, one call).
    this.calls.clear();
  }

  /** A tool call's content as text: its words, each diff as a unified diff, each terminal's output. */
  private render(call: Call): string {
    const parts: string[] = [];
    for (const c of call.content) {
      if (c.type === 'content') {
        if (c.content.type === 'text') parts.push(c.content.text);
      } else if (c.type === 'diff') parts.push(unifiedDiff(this.paths.shown(c.path), c.oldText ?? undefined, c.newText));
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
}
