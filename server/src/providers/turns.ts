import { toolNameOf } from './framing';
import type { ChatImage, ChatMessage, ToolCall } from './types';

/** A tool's result as the turn-based providers carry it: the call it answers, the tool, the text. */
export interface ToolResult {
  id: string;
  name: string;
  content: string;
}

export interface Turn {
  role: 'user' | 'assistant';
  content: string;
  /** The photos of the messages merged into this turn, in order. */
  images?: ChatImage[];
  /** Assistant turns: the tools the model called, in order. */
  toolCalls?: ToolCall[];
  /** User turns: the results of those calls, in order (both providers want them before any text). */
  results?: ToolResult[];
}

export interface Conversation {
  /** Every system message, in order, joined by a blank line; undefined when there are none. */
  system?: string;
  /** Alternating turns that start with the user, as Anthropic and Gemini require. */
  turns: Turn[];
}

/**
 * Reshapes OpenAI-style messages for the providers that take the system prompt separately and
 * want strictly alternating turns: consecutive same-role messages are merged (their photos, tool
 * calls and tool results kept with the turn, in order), a tool message joins the user's turn as a
 * result (both providers carry results in a user turn), empty ones (which both reject) dropped,
 * and a conversation that does not open with the user gets a short user turn in front so that
 * the request is accepted rather than refused.
 */
export function toConversation(messages: ChatMessage[]): Conversation {
  const system = messages
    .filter((m) => m.role === 'system' && m.content !== '')
    .map((m) => m.content)
    .join('\n\n');
  const turns: Turn[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'system') return;
    const images = m.images ?? [];
    const calls = m.toolCalls ?? [];
    const result: ToolResult | undefined = m.role === 'tool' ? { id: m.toolCallId ?? '', name: toolNameOf(messages, i), content: m.content } : undefined;
    // A message with photos, calls or a result and no text is not empty: they stay with its turn.
    if (m.content === '' && images.length === 0 && calls.length === 0 && result === undefined) return;
    const role = m.role === 'tool' ? 'user' : m.role;
    const text = result === undefined ? m.content : '';
    let turn = turns.at(-1);
    if (turn?.role !== role) {
      turn = { role, content: '' };
      turns.push(turn);
    }
    if (text !== '') turn.content = turn.content === '' ? text : `${turn.content}\n\n${text}`;
    if (images.length > 0) turn.images = [...(turn.images ?? []), ...images];
    if (calls.length > 0) turn.toolCalls = [...(turn.toolCalls ?? []), ...calls];
    if (result !== undefined) (turn.results ??= []).push(result);
  });
  if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', content: CONTINUE });
  return system === '' ? { turns } : { system, turns };
}

/** The user turn put in front of a conversation that lacks one. */
export const CONTINUE = 'Continue.';
