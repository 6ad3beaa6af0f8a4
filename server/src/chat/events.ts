/**
 * The event vocabulary of a reply as SPEC clients see it (SSE, resumable SSE, WebSocket): zero or
 * more `token` events, then exactly one `done` or `error`. Doors frame these; only the chat
 * folder decides what they say. The shapes live in ../protocol.ts, shared with the web client.
 */
export type { ChatEvent, DoneEvent, ErrorEvent, TerminalEvent, TokenEvent } from '../protocol';

/** Why a chat was cancelled, when the cancellation itself is news for the client (its message is shown). */
export class CancelReason extends Error {}

export const STOPPING_MESSAGE = 'The desktop relay is stopping; send the message again once it has restarted.';
export const STOPPED_BY_CLIENT = 'The reply was stopped by the client.';
export const CANCELLED_MESSAGE = 'The request was cancelled.';
export const PROVIDER_CANCELLED_MESSAGE = 'The provider request was cancelled.';
export const INTERNAL_FAILURE_MESSAGE = 'The desktop relay failed while streaming the reply; see the DeskRelay log on the desktop.';
