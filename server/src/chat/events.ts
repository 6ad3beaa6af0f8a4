/**
 * The event vocabulary of a reply as SPEC clients see it (SSE, resumable SSE, WebSocket): zero or
 * more `token` events, then exactly one `done` or `error`. Doors frame these; only the chat
 * folder decides what they say.
 */
export type TokenEvent = { type: 'token'; delta: string };
export type DoneEvent = { type: 'done'; content: string };
export type ErrorEvent = { type: 'error'; message: string };
export type TerminalEvent = DoneEvent | ErrorEvent;
export type ChatEvent = TokenEvent | TerminalEvent;

/** Why a chat was cancelled, when the cancellation itself is news for the client (its message is shown). */
export class CancelReason extends Error {}

export const STOPPING_MESSAGE = 'The desktop relay is stopping; send the message again once it has restarted.';
export const STOPPED_BY_CLIENT = 'The reply was stopped by the client.';
export const CANCELLED_MESSAGE = 'The request was cancelled.';
export const PROVIDER_CANCELLED_MESSAGE = 'The provider request was cancelled.';
export const INTERNAL_FAILURE_MESSAGE = 'The desktop relay failed while streaming the reply; see the DeskRelay log on the desktop.';
