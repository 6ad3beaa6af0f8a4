import type { ChatMessage } from '../providers/types';

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
