/**
 * The conversation the model gets, and fitting it into the model's context window before each
 * model call (old tool results become notes, then a summary), by an estimate of its tokens.
 */
import type { ChatService } from '../chat/service';
import type { Logger } from '../logger';
import type { AgentEvent } from '../protocol';
import type { ChatMessage, ProviderConfig, ToolCall, ToolSpec } from '../providers/types';
import type { ModelReply } from './step';

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
