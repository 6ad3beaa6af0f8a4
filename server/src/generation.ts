import type { Logger } from './logger';
import { isAbortError, ProviderError } from './providers';
import type { ChatAdapter, ChatMessage } from './providers/types';
import type { StreamEvent } from './sse';
import { ThinkWrapper } from './think';

/** Why a generation was cancelled, when the cancellation itself is news for the client. */
export class CancelReason extends Error {}

export const STOPPING_MESSAGE = 'The desktop relay is stopping; send the message again once it has restarted.';

/**
 * Receives a generation's events in order. A returned promise means "wait before pulling more
 * from the provider" (a slow client paces the provider instead of growing a buffer).
 */
export type EventSink = (event: StreamEvent) => void | Promise<void>;

/**
 * Runs one reply: zero or more token events, then exactly one done or error. Reasoning is
 * wrapped in `<think>` here, once, for every provider; `done.content` is built from exactly
 * the deltas sent.
 */
export async function runGeneration(
  adapter: () => ChatAdapter,
  messages: ChatMessage[],
  signal: AbortSignal,
  emit: EventSink,
  logger: Logger,
): Promise<StreamEvent> {
  const think = new ThinkWrapper();
  let content = '';
  const send = async (delta: string) => {
    if (delta === '') return;
    content += delta;
    await emit({ type: 'token', delta });
  };
  let terminal: StreamEvent;
  try {
    for await (const piece of adapter().stream(messages, signal)) {
      if (signal.aborted) break;
      await send(think.push(piece));
    }
    if (signal.aborted) throw signal.reason;
    await send(think.finish());
    terminal = { type: 'done', content };
  } catch (err) {
    terminal = { type: 'error', message: failureMessage(err, signal, logger) };
  }
  await emit(terminal);
  return terminal;
}

function failureMessage(err: unknown, signal: AbortSignal, logger: Logger): string {
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    return reason instanceof CancelReason ? reason.message : 'The request was cancelled.';
  }
  if (err instanceof ProviderError) return err.message;
  if (isAbortError(err)) return 'The provider request was cancelled.';
  // Not a provider's answer but our own bug: say so without details that could hold secrets.
  logger.error(`chat generation failed unexpectedly: ${err instanceof Error ? `${err.name}: ${err.message}` : typeof err}`);
  return 'The desktop relay failed while streaming the reply; see the DeskRelay log on the desktop.';
}
