import type { ChatService } from '../chat/service';
import type { Logger } from '../logger';
import type { AgentEvent } from '../protocol';
import type { ChatMessage, ProviderConfig, ToolSpec } from '../providers/types';
import { CHARS_PER_TOKEN, conversationText, DEFAULT_CONTEXT_TOKENS, dropOldResults, estimateTokens, promptBudget, SUMMARY_REQUEST } from './context';
import type { Conversation } from './conversation';
import type { ModelReply } from './modelCall';

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
