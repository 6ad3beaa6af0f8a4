/**
 * One turn of DeskRelay's own loop, in its parts: the conversation the model gets, fitted into
 * the model's context window before each model call (old tool results become notes, then a
 * summary, by an estimate of its tokens); and each step of the turn (a turn takes at most
 * `limits.maxSteps`): the model is called with the conversation, then each tool call it asked
 * for is run, asked first where the policy says so, its result capped.
 */
import type { ChatHandle, ChatService, ReplySink } from '../chat/service';
import { ChatError } from '../chat/errors';
import type { Logger } from '../logger';
import type { AgentEvent } from '../protocol';
import { ArgumentError } from '../providers/framing';
import type { ChatMessage, ProviderConfig, ToolCall, ToolSpec } from '../providers/types';
import type { ApprovalGate } from './gate';
import type { AgentLimits } from './limits';
import type { AppliedChange, CallResult } from './transcript';
import { TOOLS, type AgentTool, type PreparedCall } from './tools';
import { WorkspaceError, type Workspace } from './workspace';

const size = (m: ChatMessage) => m.content.length + (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0);

/** The conversation as the model gets it, and its size in characters (what maxConversationChars caps). */
export class Conversation {
  readonly messages: ChatMessage[] = [];
  private chars = 0;

  get size(): number {
    return this.chars;
  }

  add(m: ChatMessage): void {
    this.messages.push(m);
    this.chars += size(m);
  }

  /** The whole conversation replaced (a kept session read back). */
  reset(messages: readonly ChatMessage[]): void {
    this.messages.splice(0, this.messages.length, ...messages);
    this.recount();
  }

  /** The system message (the first) replaced. */
  setSystem(content: string): void {
    if (this.messages[0]?.role !== 'system') return;
    this.chars += content.length - this.messages[0].content.length;
    this.messages[0] = { role: 'system', content };
  }

  /** After the messages were changed in place (results dropped, a summary). */
  recount(): void {
    this.chars = this.messages.reduce((n, m) => n + size(m), 0);
  }
}

/** Without a context length from the provider or the config: what most local models run with. */
const DEFAULT_CONTEXT_TOKENS = 32 * 1024;
/** The estimate: about four characters a token (English and code), no tokenizer at hand. */
const CHARS_PER_TOKEN = 4;

export const estimateTokens = (messages: readonly ChatMessage[], tools: readonly ToolSpec[] = []): number =>
  Math.ceil((messages.reduce((n, m) => n + size(m), 0) + (tools.length ? JSON.stringify(tools).length : 0)) / CHARS_PER_TOKEN);

/** Tokens the conversation may take: the rest of the context is the reply's (a quarter, at most 4096). */
export const promptBudget = (contextTokens: number): number => contextTokens - Math.min(4096, Math.floor(contextTokens / 4));

const DROPPED = ': dropped to save room';

/** What a tool result was, in one line: "read src/a.ts, 212 lines". */
function describe(call: ToolCall | undefined, content: string): string {
  const lines = content === '' ? 0 : content.split('\n').length;
  const a = call?.arguments ?? {};
  const str = (k: string) => (typeof a[k] === 'string' ? (a[k] as string) : '');
  const what =
    call?.name === 'read_file' ? `read ${str('path')}`
      : call?.name === 'search' ? `searched for ${JSON.stringify(str('query'))}`
        : call?.name === 'list_files' ? `listed ${str('path') || 'the folder'}`
          : call?.name === 'run_command' ? `ran ${str('command').slice(0, 120)}`
            : call?.name === 'git_diff' ? 'git diff'
              : (call?.name ?? 'a tool');
  return `${what}, ${lines} line${lines === 1 ? '' : 's'}`;
}

/**
 * Replaces the oldest tool results with a one-line note each until the conversation fits
 * `budget` tokens, not those of the last reply (the model is working on them) unless
 * `keepLastReply` is false. Returns the notes.
 */
function dropOldResults(messages: ChatMessage[], tools: readonly ToolSpec[], budget: number, keepLastReply = true): string[] {
  const notes: string[] = [];
  const calls = new Map<string, ToolCall>();
  for (const m of messages) for (const c of m.toolCalls ?? []) calls.set(c.id, c);
  let lastReply = messages.length;
  for (let i = messages.length - 1; keepLastReply && i >= 0; i--) {
    if (messages[i]!.role === 'assistant') {
      lastReply = i;
      break;
    }
  }
  for (let i = 0; i < lastReply && estimateTokens(messages, tools) > budget; i++) {
    const m = messages[i]!;
    if (m.role !== 'tool' || m.content.endsWith(DROPPED)) continue;
    const note = `${describe(m.toolCallId ? calls.get(m.toolCallId) : undefined, m.content)}${DROPPED}`;
    messages[i] = { ...m, content: note };
    notes.push(note);
  }
  return notes;
}

/** The conversation as text for the summary request, its start cut to fit `maxChars` (the end is what matters now). */
function conversationText(messages: readonly ChatMessage[], maxChars: number): string {
  const parts = messages
    .filter((m) => m.role !== 'system')
    .map((m) => {
      if (m.role === 'tool') return `Tool result (${m.name ?? 'tool'}): ${m.content}`;
      const calls = (m.toolCalls ?? []).map((c) => ` [called ${c.name} ${JSON.stringify(c.arguments)}]`).join('');
      return `${m.role === 'user' ? 'User' : 'Assistant'}: ${m.content}${calls}`;
    });
  const text = parts.join('\n\n');
  return text.length <= maxChars ? text : `[…the start is cut…]\n${text.slice(text.length - maxChars)}`;
}

const SUMMARY_REQUEST =
  'The conversation above is too long for your context. Write a summary of the session so far for yourself to continue from: the task, what you found (files, facts, decisions), what you changed, what is left to do. Be specific and brief. Do not call tools.';

const SUMMARY_NOTE = 'Earlier steps of this session were summarised to fit your context. Your summary of them:';

export interface ContextFitDeps {
  chat: ChatService;
  logger: Logger;
  /** The session's short id, for the log. */
  short: string;
  emit(event: AgentEvent): void;
  /** A quiet model call without tools (the summary). */
  summarise(signal: AbortSignal, messages: ChatMessage[]): Promise<ModelReply>;
}

/**
 * Before a model call: when the conversation would not fit the model's context (its length
 * from the provider, else the provider record's contextLength, else 32k tokens; 4 characters a
 * token), the oldest tool results become one-line notes; if it still does not fit, the model
 * is asked for a summary of the session so far and the conversation goes on from it. Each step
 * is said in a `context` event.
 */
export class ContextFitter {
  /** The model's context length, asked once per provider record. */
  private context: { provider: ProviderConfig; tokens: number } | undefined;

  constructor(private readonly deps: ContextFitDeps) {}

  async fit(conversation: Conversation, tools: ToolSpec[], signal: AbortSignal): Promise<void> {
    const { chat, logger, short, emit } = this.deps;
    const messages = conversation.messages;
    let provider: ProviderConfig;
    try {
      provider = chat.provider();
    } catch {
      return; // the model call says why
    }
    if (this.context?.provider !== provider) {
      const said = await chat.contextLength(provider, signal);
      this.context = { provider, tokens: said ?? DEFAULT_CONTEXT_TOKENS };
    }
    const { tokens } = this.context;
    const budget = promptBudget(tokens);
    if (estimateTokens(messages, tools) <= budget) return;
    const dropped = dropOldResults(messages, tools, budget);
    if (dropped.length > 0) {
      conversation.recount();
      logger.info(`agent ${short}: ${dropped.length} old tool result(s) dropped to fit the model's context (${tokens} tokens)`);
      emit({ type: 'context', message: `The conversation outgrew the model's context (${tokens} tokens): ${dropped.length} earlier tool result${dropped.length === 1 ? '' : 's'} replaced by a note.`, dropped });
    }
    if (estimateTokens(messages, tools) <= budget) return;
    const system = messages[0]!;
    const room = (budget - estimateTokens([system])) * CHARS_PER_TOKEN - SUMMARY_REQUEST.length - 200;
    const reply = await this.deps.summarise(signal, [system, { role: 'user', content: `${conversationText(messages, Math.max(room, 1000))}\n\n${SUMMARY_REQUEST}` }]);
    if (!reply.ok || signal.aborted) return; // the next call fails on its own, or the turn was stopped
    // What the model works on now stays as it is: the last reply's calls and results, or the new message.
    const last = messages.at(-1)!;
    const from = last.role === 'tool' ? messages.findLastIndex((m) => m.role === 'assistant') : last.role === 'user' ? messages.findLastIndex((m) => m.role !== 'user') + 1 : messages.length;
    const tail = messages.slice(Math.max(from, 1));
    messages.splice(0, messages.length, system, { role: 'user', content: `${SUMMARY_NOTE}\n\n${reply.text}` }, ...tail);
    if (estimateTokens(messages, tools) > budget) dropOldResults(messages, tools, budget, false);
    conversation.recount();
    logger.info(`agent ${short}: earlier steps summarised to fit the model's context (${tokens} tokens)`);
    emit({ type: 'context', message: `Earlier steps were summarised to fit the model's context (${tokens} tokens).`, summarised: true });
  }
}

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
