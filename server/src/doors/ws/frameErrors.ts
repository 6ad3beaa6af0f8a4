/**
 * What `ws` does with a frame it rejects: it sends a close frame and emits `error` on the
 * WebSocket, once. Without a listener that `error` is an uncaught exception that ends the whole
 * relay (issue 21, finding 1), so every socket listens, and the log line says which close code
 * went out. `ws` keeps the code on a private symbol; its error codes name it as well.
 */
const CLOSE_CODES: Record<string, number> = {
  WS_ERR_INVALID_UTF8: 1007,
  WS_ERR_TOO_MANY_BUFFERED_PARTS: 1008,
  WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH: 1009,
  WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: 1009,
};

/** The close code `ws` sent for a frame it rejected (1002, protocol error, for all the others); undefined for an error that was not about a frame. */
export function frameErrorCloseCode(err: Error): number | undefined {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('WS_ERR_')) return undefined;
  return CLOSE_CODES[code] ?? 1002;
}

/** The one log line for a WebSocket's `error`: the frame error's message is ws's own wording, never client bytes. */
export function describeSocketError(requestId: string, err: Error): string {
  const code = frameErrorCloseCode(err);
  return code === undefined ? `websocket ${requestId} failed: ${err.message}` : `websocket ${requestId} closed with ${code}: ${err.message}`;
}
