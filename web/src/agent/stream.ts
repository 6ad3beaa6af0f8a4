/**
 * Following a session's events: `POST …/events` (quick tunnels hold a GET event stream back until
 * it closes), resumed with `Last-Event-ID` after a dropped connection, a sleeping phone or the
 * page coming back, so nothing is shown twice and nothing is lost (the chat's resume rules).
 */
import type { AgentEvent } from '../../../server/src/protocol';
import { AGENT_PATHS } from '../../../server/src/protocol/agent';
import { HEADERS, pathTo } from '../../../server/src/protocol/paths';
import { bearer } from '../api';
import { app } from '../app';
import { readText, sseParser } from '../sse';

export type Reach = 'live' | 'reconnecting' | 'ended';

export interface Follow {
  /** The last event id received (what a resume sends). */
  readonly lastId: number;
  /** Reconnects now (the page is visible again, the phone is back online) if it is not connected. */
  wake(): void;
  close(): void;
}

const RETRY_MS = [500, 1000, 2000, 4000, 8000];

export function followSession(id: string, onEvent: (e: AgentEvent, eventId: number | null) => void, onReach: (r: Reach, why?: string) => void): Follow {
  let lastId = 0;
  let closed = false;
  let connected = false;
  let controller: AbortController | null = null;
  let attempt = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const schedule = () => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => void connect(), attempt === 0 ? 0 : RETRY_MS[Math.min(attempt - 1, RETRY_MS.length - 1)]);
    attempt++;
  };

  async function connect(): Promise<void> {
    clearTimeout(timer);
    if (closed || connected || !app.pairing) return;
    connected = true;
    controller = new AbortController();
    const headers: Record<string, string> = { ...bearer(app.pairing.token) };
    if (lastId > 0) headers[HEADERS.lastEventId] = String(lastId);
    try {
      const res = await fetch(pathTo(AGENT_PATHS.agentEvents, { id }), { method: 'POST', headers, cache: 'no-store', signal: controller.signal });
      if (res.status === 404 || res.status === 403 || res.status === 401) {
        closed = true;
        onReach('ended', res.status === 404 ? 'This session is gone from the desktop (deleted, or the relay restarted).' : 'The desktop no longer lets this phone follow the agent.');
        return;
      }
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      onReach('live');
      attempt = 0;
      const parse = sseParser((data, eventId) => {
        let event: AgentEvent;
        try {
          event = JSON.parse(data) as AgentEvent;
        } catch {
          return;
        }
        const n = eventId !== null && /^\d+$/.test(eventId) ? Number(eventId) : null;
        if (n !== null) {
          if (n <= lastId) return; // already shown (a proxy replayed it)
          lastId = n;
        }
        onEvent(event, n);
      });
      await readText(res.body, parse);
    } catch {
      /* dropped: resumed below */
    } finally {
      connected = false;
      controller = null;
    }
    if (!closed) {
      onReach('reconnecting');
      schedule();
    }
  }

  void connect();
  return {
    get lastId() {
      return lastId;
    },
    wake() {
      if (closed) return;
      attempt = 0;
      // After a sleep the connection may look open but be dead: start again from the last id.
      if (connected) controller?.abort();
      else void connect();
    },
    close() {
      closed = true;
      clearTimeout(timer);
      controller?.abort();
    },
  };
}
