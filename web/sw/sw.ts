/**
 * The web client's service worker: it keeps the app shell (the page, its script, style, manifest
 * and icons) so the app opens without the desktop, shows the chats saved on the phone and says
 * the desktop is unreachable. It caches nothing else: never an API response (`/v1/…`), never a
 * request that carries credentials, never the token (which lives in the page's fragment and
 * storage, not in any URL the page fetches).
 *
 * The shell is fetched from the network first (the relay serves it with `no-cache`, so an update
 * shows on the next load) and from the cache only when the network fails.
 */
import { decideNotified } from '../src/agent/notifiedDecision';

declare const self: ServiceWorkerGlobalScope;
/** Filled in by scripts/build-web.mjs: the shell's paths and a hash of their contents. */
declare const __SHELL__: string[];
declare const __VERSION__: string;

const CACHE = `deskrelay-shell-${__VERSION__}`;
const SHELL = new Set(__SHELL__);

function shellPath(request: Request): string | null {
  if (request.method !== 'GET') return null;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || url.pathname.startsWith('/v1')) return null;
  if (request.headers.has('Authorization')) return null;
  const path = url.pathname === '/index.html' ? '/' : url.pathname;
  if (request.mode === 'navigate') return path === '/' ? '/' : null;
  return SHELL.has(path) ? path : null;
}

self.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      await cache.addAll([...SHELL].map((path) => new Request(path, { cache: 'no-cache', credentials: 'omit' })));
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith('deskrelay-shell-') && name !== CACHE) await caches.delete(name);
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('fetch', (event) => {
  const path = shellPath(event.request);
  if (!path) return; // the network, untouched
  event.respondWith(
    (async () => {
      const cache = await caches.open(CACHE);
      try {
        const res = await fetch(event.request.mode === 'navigate' ? new Request('/', { cache: 'no-cache', credentials: 'omit' }) : event.request);
        if (res.ok && res.type === 'basic') await cache.put(path, res.clone());
        return res;
      } catch (err) {
        const cached = await cache.match(path);
        if (cached) return cached;
        throw err;
      }
    })(),
  );
});

/**
 * Push (issue 15): the desktop says a reply the page stopped watching is ready. The payload holds
 * only its Idempotency-Key and whether it ended well. A page on screen sees the reply itself, so
 * the notification is for when it is not.
 */
self.addEventListener('push', (event) => {
  // ReplyReadyPush in server/src/protocol/push.ts, read field by field: a push is checked, not trusted.
  let data: { type?: unknown; idempotencyKey?: unknown; ok?: unknown } = {};
  try {
    data = (event.data?.json() ?? {}) as typeof data;
  } catch {
    return;
  }
  if (data.type === 'agent_needs_you' || data.type === 'agent_idle') return agentPush(event, data as AgentPushData);
  if (data.type !== 'reply_ready' || typeof data.idempotencyKey !== 'string') return;
  const key = data.idempotencyKey;
  const ok = data.ok !== false;
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      if (windows.some((w) => w.visibilityState === 'visible' && w.focused)) return;
      await self.registration.showNotification(ok ? 'Your reply is ready' : 'Your reply stopped with an error', {
        body: ok ? 'Tap to read it in DeskRelay.' : 'Tap to see what happened in DeskRelay.',
        tag: `reply-${key}`,
        icon: 'icons/icon-192.png',
        data: { idempotencyKey: key },
      });
    })(),
  );
});

// AgentPush in server/src/protocol/push.ts: only where to look, never a file's text or a command.
interface AgentPushData {
  type: 'agent_needs_you' | 'agent_idle';
  session?: unknown;
  callId?: unknown;
}

/** Whether this platform shows notification buttons (Chromium on Android and desktop; not iOS). */
function notificationActions(): boolean {
  return ((Notification as unknown as { maxActions?: number }).maxActions ?? 0) >= 2;
}

/**
 * The agent waits for a decision, or finished a turn, and no page follows it: a notification that
 * opens the session at its card; where the platform has buttons, a decision also offers Allow and
 * Deny, signed here with the phone's key (notifiedDecision.ts) after checking what it allows.
 */
function agentPush(event: PushEvent, data: AgentPushData): void {
  if (typeof data.session !== 'string') return;
  const session = data.session;
  const callId = typeof data.callId === 'string' ? data.callId : undefined;
  const needs = data.type === 'agent_needs_you';
  const actions = needs && callId && notificationActions() ? [{ action: 'allow', title: 'Allow' }, { action: 'deny', title: 'Deny' }] : undefined;
  event.waitUntil(
    self.registration.showNotification(needs ? 'The agent needs you' : 'The agent finished', {
      body: needs ? 'An edit or a command waits for your answer. Tap to see it.' : 'Tap to see what it did.',
      tag: `agent-${session}`,
      icon: 'icons/icon-192.png',
      data: { agentSession: session, ...(callId ? { callId } : {}), agentType: data.type },
      ...(actions ? { actions } : {}),
    } as NotificationOptions),
  );
}

/** Allow / Deny tapped on the notification: signed and sent; if it did not go through, a notification that says why and opens the card. */
async function decideFromNotification(session: string, callId: string, decision: 'allow' | 'deny'): Promise<void> {
  const outcome = await decideNotified(session, callId, decision);
  if (outcome.ok) return;
  await self.registration.showNotification('Your answer was not sent', {
    body: `${outcome.message} Tap to open the request.`,
    tag: `agent-${session}`,
    icon: 'icons/icon-192.png',
    data: { agentSession: session, callId, agentType: 'agent_needs_you' },
  });
}

/** Opening the notification brings the chat back: the open page (told which reply), or a new one, which resumes the reply it was streaming. */
self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const data = event.notification.data as { agentSession?: string; callId?: string; agentType?: string; idempotencyKey?: string } | null;
  if (data?.agentSession) {
    const { agentSession, callId, agentType } = data;
    if (callId && (event.action === 'allow' || event.action === 'deny')) {
      event.waitUntil(decideFromNotification(agentSession, callId, event.action));
      return;
    }
    const q = new URLSearchParams({ agent: agentSession, ...(callId ? { call: callId } : {}) });
    event.waitUntil(bringBack({ type: agentType, session: agentSession, callId }, `./?${q.toString()}`));
    return;
  }
  event.waitUntil(bringBack({ type: 'reply_ready', idempotencyKey: data?.idempotencyKey }, './'));
});

/** Tells the focused (or first) open page `message`; with no page open, opens `url`. */
async function bringBack(message: object, url: string): Promise<void> {
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const page = windows.find((w) => w.focused) ?? windows[0];
  if (page) {
    await page.focus().catch(() => page);
    page.postMessage(message);
    return;
  }
  await self.clients.openWindow(url);
}
