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

/** At most this much of the earlier transcript goes to an agent that cannot load its session (the newest part). */
export const MAX_EARLIER_CHARS = 64 * 1024;

/**
 * A kept session's transcript as text, for an agent that starts a new session after a restart
 * and cannot load its old one: what the user said, what the agent said and did, in order.
 */
export function earlierText(transcript: readonly TranscriptItem[]): string {
  const lines = transcript.flatMap((t) => {
    if (t.role === 'user') return [`User: ${t.text}`];
    if (t.role === 'assistant') return [...(t.text ? [`You: ${t.text}`] : []), ...t.toolCalls.map((c) => `You called ${c.tool} ${JSON.stringify(c.input)}`)];
    return [`${t.tool} ${t.denied ? 'denied' : t.ok ? 'done' : 'failed'}: ${t.output.length > 2000 ? `${t.output.slice(0, 2000)}…` : t.output}`];
  });
  const text = lines.join('\n');
  return text.length > MAX_EARLIER_CHARS ? `…${text.slice(-MAX_EARLIER_CHARS)}` : text;
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
