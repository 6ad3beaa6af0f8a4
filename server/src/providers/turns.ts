import type { ChatImage, ChatMessage } from './types';

export interface Turn {
  role: 'user' | 'assistant';
  content: string;
  /** The photos of the messages merged into this turn, in order. */
  images?: ChatImage[];
}

export interface Conversation {
  /** Every system message, in order, joined by a blank line; undefined when there are none. */
  system?: string;
  /** Alternating turns that start with the user, as Anthropic and Gemini require. */
  turns: Turn[];
}

/**
 * Reshapes OpenAI-style messages for the providers that take the system prompt separately and
 * want strictly alternating turns: consecutive same-role messages are merged (their photos kept
 * with the turn, in order), empty ones (which both reject) dropped, and a conversation that does not open with the user gets a short user
 * turn in front so that the request is accepted rather than refused.
 */
export function toConversation(messages: ChatMessage[]): Conversation {
  const system = messages
    .filter((m) => m.role === 'system' && m.content !== '')
    .map((m) => m.content)
    .join('\n\n');
  const turns: Turn[] = [];
  for (const m of messages) {
    const images = m.images ?? [];
    // A message with photos and no text is not empty: its photos stay with its turn.
    if (m.role === 'system' || (m.content === '' && images.length === 0)) continue;
    // Until the adapters carry tool turns in their own form, a tool's result reads as the user's.
    const role = m.role === 'tool' ? 'user' : m.role;
    const last = turns.at(-1);
    if (last && last.role === role) {
      if (m.content !== '') last.content = last.content === '' ? m.content : `${last.content}\n\n${m.content}`;
      if (images.length > 0) last.images = [...(last.images ?? []), ...images];
    } else {
      turns.push(images.length > 0 ? { role, content: m.content, images: [...images] } : { role, content: m.content });
    }
  }
  if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', content: CONTINUE });
  return system === '' ? { turns } : { system, turns };
}

/** The user turn put in front of a conversation that lacks one. */
export const CONTINUE = 'Continue.';
