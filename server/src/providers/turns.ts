import type { ChatMessage } from './types';

export interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

export interface Conversation {
  /** Every system message, in order, joined by a blank line; undefined when there are none. */
  system?: string;
  /** Alternating turns that start with the user, as Anthropic and Gemini require. */
  turns: Turn[];
}

/**
 * Reshapes OpenAI-style messages for the providers that take the system prompt separately and
 * want strictly alternating turns: consecutive same-role messages are merged, empty ones (which
 * both reject) dropped, and a conversation that does not open with the user gets a short user
 * turn in front so that the request is accepted rather than refused.
 */
export function toConversation(messages: ChatMessage[]): Conversation {
  const system = messages
    .filter((m) => m.role === 'system' && m.content !== '')
    .map((m) => m.content)
    .join('\n\n');
  const turns: Turn[] = [];
  for (const m of messages) {
    if (m.role === 'system' || m.content === '') continue;
    const last = turns.at(-1);
    if (last && last.role === m.role) last.content += `\n\n${m.content}`;
    else turns.push({ role: m.role, content: m.content });
  }
  if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', content: CONTINUE });
  return system === '' ? { turns } : { system, turns };
}

/** The user turn put in front of a conversation that lacks one. */
export const CONTINUE = 'Continue.';
