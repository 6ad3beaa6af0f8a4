import type { Logger } from '../logger';
import { isAbortError, ProviderError } from '../providers';
import type { ChatAdapter, ChatMessage, Piece } from '../providers/types';
import type { StreamEvent } from '../http/sse';
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
 * Receives a provider's raw pieces in order (reasoning kept apart from text), for consumers that
 * frame them their own way. `end` runs once the provider finished cleanly; a throw from either
 * counts as a failure of the generation. A returned promise paces the provider, as for EventSink.
 */
export interface PieceSink {
  piece(piece: Piece): void | Promise<void>;
  end?(): void | Promise<void>;
}

export type Outcome = { ok: true } | { ok: false; message: string };

/**
 * The one loop that talks to a provider: pulls pieces into the sink until the provider ends,
 * fails or the signal aborts, and reports how it ended with a message fit for the client.
 * Never throws.
 */
export async function runPieces(
  adapter: () => ChatAdapter,
  messages: ChatMessage[],
  signal: AbortSignal,
  sink: PieceSink,
  logger: Logger,
): Promise<Outcome> {
  try {
    for await (const piece of adapter().stream(messages, signal)) {
      if (signal.aborted) break;
      await sink.piece(piece);
    }
    if (signal.aborted) throw signal.reason;
    await sink.end?.();
    return { ok: true };
  } catch (err) {
    return { ok: false, message: failureMessage(err, signal, logger) };
  }
}

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
  const outcome = await runPieces(adapter, messages, signal, { piece: (p) => send(think.push(p.kind, p.text)), end: () => send(think.finish()) }, logger);
  const terminal: StreamEvent = outcome.ok ? { type: 'done', content } : { type: 'error', message: outcome.message };
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
