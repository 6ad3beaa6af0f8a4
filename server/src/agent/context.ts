import type { ChatMessage, ToolCall, ToolSpec } from '../providers/types';

/** Without a context length from the provider or the config: what most local models run with. */
export const DEFAULT_CONTEXT_TOKENS = 32 * 1024;
/** The estimate: about four characters a token (English and code), no tokenizer at hand. */
export const CHARS_PER_TOKEN = 4;

export const estimateTokens = (messages: readonly ChatMessage[], tools: readonly ToolSpec[] = []): number =>
  Math.ceil((messages.reduce((n, m) => n + m.content.length + (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0), 0) + (tools.length ? JSON.stringify(tools).length : 0)) / CHARS_PER_TOKEN);

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
export function dropOldResults(messages: ChatMessage[], tools: readonly ToolSpec[], budget: number, keepLastReply = true): string[] {
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
export function conversationText(messages: readonly ChatMessage[], maxChars: number): string {
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

export const SUMMARY_REQUEST =
  'The conversation above is too long for your context. Write a summary of the session so far for yourself to continue from: the task, what you found (files, facts, decisions), what you changed, what is left to do. Be specific and brief. Do not call tools.';
