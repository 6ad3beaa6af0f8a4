/** The relay's HTTP API, same-origin (CSP: connect-src 'self'). */
import type { ErrorBody, ErrorCode, RemoteInfo } from '../../server/src/protocol';
import { CONVERSATION_PATHS } from '../../server/src/protocol/conversations';
import { CHAT_PATHS, HEADERS, pathTo } from '../../server/src/protocol/paths';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** The relay's code, or the page's own: `network` (no answer at all), `wrong_service` (not a DeskRelay relay). */
    readonly code: ErrorCode | 'network' | 'wrong_service',
  ) {
    super(message);
  }
}

/** A pairing token refused: pairing links last until the relay restarts or its token is rotated. */
export const AUTH_MESSAGE = 'This pairing link is no longer valid: DeskRelay on the desktop restarted or its token was rotated. Scan the new QR code or enter a pairing code.';
/** No answer at all: a restart (devices stay paired through it), the desktop off, its tunnel down, the phone offline. */
export const UNREACHABLE_MESSAGE = 'The desktop is unreachable: DeskRelay on it may be restarting, or the desktop or its tunnel is off. This phone stays paired; your saved chats are still here.';

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/**
 * A fetch that failed on the way, not at the relay: the connection dropped, the phone went
 * offline, or WebKit killed it while the page was in the background. Each engine words it its
 * own way: Chromium "Failed to fetch" / "network error", WebKit "Load failed" (also "The network
 * connection was lost."), Firefox "NetworkError when attempting to fetch resource.".
 */
export function isDroppedConnection(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'AbortError') return false;
  if (err.name === 'NetworkError') return true;
  if (!(err instanceof TypeError)) return false;
  return /load failed|failed to fetch|network ?error|network connection was lost|fetch failed|terminated|input stream/i.test(err.message);
}

/** Turns a non-2xx response into a user-facing ApiError (the relay's error body when there is one). */
export async function apiError(res: Response): Promise<ApiError> {
  let code: ErrorCode | '' = '';
  let message = '';
  try {
    const body = (await res.json()) as Partial<ErrorBody> | null;
    code = body?.error?.code ?? '';
    message = body?.error?.message ?? '';
  } catch {
    /* not the relay's error body */
  }
  if (res.status === 401) return new ApiError(AUTH_MESSAGE, 401, code || 'auth.invalid_token');
  // A tunnel (cloudflared: 502, 530) or proxy answering for a relay that is down or restarting:
  // the desktop is unreachable, which keeps this phone paired; it is not another service.
  if (!code && (res.status === 502 || res.status === 503 || res.status === 504 || res.status === 530)) return new ApiError(UNREACHABLE_MESSAGE, res.status, 'network');
  if (!code) return new ApiError(`The server at this address answered HTTP ${res.status}; it does not look like a DeskRelay relay.`, res.status, 'wrong_service');
  return new ApiError(message || `The relay refused the request (${code}).`, res.status, code);
}

export async function fetchInfo(token: string): Promise<RemoteInfo> {
  let res: Response;
  try {
    res = await fetch(CHAT_PATHS.info, { headers: bearer(token), cache: 'no-store' });
  } catch {
    throw new ApiError(UNREACHABLE_MESSAGE, 0, 'network');
  }
  if (!res.ok) throw await apiError(res);
  let info: unknown;
  try {
    info = await res.json();
  } catch {
    throw new ApiError('This address answers, but not as DeskRelay (the reply is not JSON).', res.status, 'wrong_service');
  }
  if (!info || typeof info !== 'object' || (info as RemoteInfo).service !== 'deskrelay') {
    throw new ApiError('This address answers, but it is not a DeskRelay relay (wrong service).', res.status, 'wrong_service');
  }
  return info as RemoteInfo;
}

/**
 * A resumable (keyed) generation outlives its connection, so leaving is not enough: ask the relay
 * to cancel it. Best effort: a relay without the cancel answers 404/405 and the generation ends
 * on its own (or after the relay's resume window).
 */
export function cancelKeyed(token: string, key: string): void {
  fetch(CHAT_PATHS.chatCancel, {
    method: 'POST',
    headers: { ...bearer(token), [HEADERS.idempotencyKey]: key },
    keepalive: true,
    cache: 'no-store',
  }).catch(() => {});
}

/** Stops the reply the desktop is running in a kept conversation (issue 30); best effort, as cancelKeyed. */
export function stopConversation(token: string, id: string): void {
  fetch(pathTo(CONVERSATION_PATHS.conversationStop, { id }), { method: 'POST', headers: bearer(token), keepalive: true, cache: 'no-store' }).catch(() => {});
}

/** A fresh Idempotency-Key (IDEMPOTENCY_KEY_RE): 22 url-safe characters of randomness. */
export function newKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
