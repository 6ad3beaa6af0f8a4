import type { ErrorCode } from '../errors';

/** The CONTRACT codes the chat core refuses with (CONTRACT §3); which HTTP status each is, the doors say. */
export type ChatErrorCode = Extract<ErrorCode, 'chat.no_provider' | 'chat.too_many_streams' | 'request.invalid_body' | 'request.body_too_large'>;

/**
 * A refusal of the chat core: no usable provider, no free stream slot, a conversation it cannot
 * send. It knows no HTTP: each door renders it in its own dialect (CONTRACT's error body or SSE
 * `error` event, OpenAI's error object, Ollama's `{"error": …}`), and the agent reports it as
 * its turn's failure. Its message is shown to users, so it must be safe.
 */
export class ChatError extends Error {
  constructor(
    readonly code: ChatErrorCode,
    message: string,
    /** When the client may try again, in seconds (a stream slot frees soon). */
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}
