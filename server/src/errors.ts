/**
 * The error a request fails with, below both the chat core (chat/) and the HTTP front (http/):
 * the chat service refuses with it, the funnel renders it in the route's dialect.
 */

import type { ErrorCode } from './protocol';

/** Every machine-readable code a DeskRelay response can carry: the protocol's list (protocol/errors.ts). */
export type { ErrorCode };

/** A failure that becomes the CONTRACT error body. Its message is shown to users, so it must be safe. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Close the connection after answering, instead of reading what the client still sends. */
    readonly closeConnection = false,
  ) {
    super(message);
  }
}
