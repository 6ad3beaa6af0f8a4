/**
 * Tunables. `#…&wsAfterMs=N` (or window.DESKRELAY_WS_AFTER_MS set before load) changes how long
 * an SSE stream may show no bytes before the client switches to the WebSocket; tests shorten it.
 */
export const settings = { wsAfterMs: 4000, stallMs: 40000, resumeAttempts: 5, renderEveryMs: 40 };

declare global {
  interface Window {
    DESKRELAY_WS_AFTER_MS?: unknown;
  }
}

// Read once at load (a reply's named elements cannot reach window's properties, see render.ts).
if (typeof window.DESKRELAY_WS_AFTER_MS === 'number') settings.wsAfterMs = window.DESKRELAY_WS_AFTER_MS;
