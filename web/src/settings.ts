/**
 * Tunables. `#…&wsAfterMs=N` (or window.DESKRELAY_WS_AFTER_MS set before load) changes how long
 * an SSE stream may show no bytes before the client switches to the WebSocket; tests shorten it.
 * `stallMs`: a stream sends at least a keep-alive every 15 s, so 20 s without a byte is a dead
 * connection. `reconnectForMs`: how long a cut reply keeps trying to resume by itself before it
 * says the desktop cannot be reached (and offers Retry).
 */
export const settings = { wsAfterMs: 4000, stallMs: 20_000, reconnectForMs: 30_000, renderEveryMs: 40 };

declare global {
  interface Window {
    DESKRELAY_WS_AFTER_MS?: unknown;
  }
}

// Read once at load (a reply's named elements cannot reach window's properties, see render.ts).
if (typeof window.DESKRELAY_WS_AFTER_MS === 'number') settings.wsAfterMs = window.DESKRELAY_WS_AFTER_MS;
