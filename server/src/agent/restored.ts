import type { ChatMessage } from '../providers/types';
import type { TranscriptItem } from './transcript';

export const RESTARTED_NOT_RUN = 'Not run: the desktop relay restarted before this call ran.';
export const RESTARTED_DENIED = 'Denied: the desktop relay restarted while this approval waited. Nothing was changed or run.';
export const RESTARTED_INTERRUPTED = 'The desktop relay restarted while this turn ran: it was interrupted. Send a message to go on.';

/** An answer for every call the model made without one: a provider refuses a conversation with a call left unanswered. */
export function answersForUnanswered(messages: readonly ChatMessage[]): ChatMessage[] {
  const answered = new Set(messages.filter((m) => m.role === 'tool').map((m) => m.toolCallId));
  return messages.flatMap((m) => (m.toolCalls ?? []).filter((call) => !answered.has(call.id)).map((call): ChatMessage => ({ role: 'tool', content: RESTARTED_NOT_RUN, toolCallId: call.id, name: call.name })));
}

/** The tool a transcript's call id named ('' when not found). */
export function toolOf(transcript: readonly TranscriptItem[], callId: string): string {
  for (const t of transcript) {
    if (t.role !== 'assistant') continue;
    const call = t.toolCalls.find((c) => c.callId === callId);
    if (call) return call.tool;
  }
  return '';
}
