/**
 * "Tell me when the reply is ready" (issue 15): the bell in the header. Permission is asked only
 * when the bell is tapped (a user gesture), never at load. The browser subscribes with the
 * desktop's VAPID public key, and the subscription goes to the relay, which pushes
 * `{"type":"reply_ready","idempotencyKey":"…","ok":…}` when a reply ends with the page gone; the
 * service worker (web/sw/sw.ts) shows the notification, and opening it brings the chat back.
 *
 * Subscriptions belong to the token on the desktop, so each (re)connection posts the browser's
 * subscription again, without asking anything, once the user turned the bell on.
 */
import type { PushKey } from '../../server/src/protocol';
import { PUSH_PATHS } from '../../server/src/protocol/push';
import { ApiError, bearer } from './api';
import { deviceAwareError } from './devices';
import { localStore } from './storage';

const PUSH_ON_KEY = 'deskrelay.push';

export type PushSupport = 'ok' | 'ios-needs-install' | 'insecure' | 'unsupported';

/** Whether this browser can take pushes here, and if not why (iOS: only a web app on the home screen). */
export function pushSupport(): PushSupport {
  if (!window.isSecureContext) return 'insecure';
  const ios = /iPhone|iPad|iPod/.test(navigator.userAgent) || (navigator.platform === 'MacIntel' && navigator.maxTouchPoints > 1);
  const installed = matchMedia('(display-mode: standalone)').matches || (navigator as { standalone?: boolean }).standalone === true;
  const apis = 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
  if (ios && !installed) return 'ios-needs-install';
  return apis ? 'ok' : 'unsupported';
}

export const PUSH_UNAVAILABLE: Record<Exclude<PushSupport, 'ok'>, string> = {
  'ios-needs-install': 'On iPhone and iPad, notifications work only in the installed app: tap Share, then "Add to Home Screen", and open DeskRelay from there.',
  insecure: 'Notifications need the https address (the tunnel), not a plain http one.',
  unsupported: 'This browser cannot receive push notifications.',
};

/** The user turned the bell on (and has not turned it off since). */
export const pushWanted = () => localStore.read(PUSH_ON_KEY) === true;

function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const text = atob(base64url.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

const sameKey = (a: ArrayBuffer | null, b: Uint8Array) => !!a && a.byteLength === b.length && new Uint8Array(a).every((v, i) => v === b[i]);

async function relayJson(token: string, method: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(path, {
    method,
    headers: { ...bearer(token), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  if (!res.ok) throw await deviceAwareError(res, token);
  return res;
}

/** Subscribes this browser (with the desktop's key; an old subscription under another key is replaced) and tells the relay. */
async function subscribe(token: string): Promise<void> {
  const { publicKey } = (await (await relayJson(token, 'GET', PUSH_PATHS.pushKey)).json()) as PushKey;
  const key = keyBytes(publicKey);
  const registration = await navigator.serviceWorker.ready;
  let subscription = await registration.pushManager.getSubscription();
  if (subscription && !sameKey(subscription.options.applicationServerKey, key)) {
    await subscription.unsubscribe();
    subscription = null;
  }
  subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  await relayJson(token, 'POST', PUSH_PATHS.pushSubscriptions, subscription.toJSON());
}

/** The bell tapped on: ask for permission (this is the user gesture), then subscribe. Throws a message for the user. */
export async function turnPushOn(token: string): Promise<void> {
  const support = pushSupport();
  if (support !== 'ok') throw new Error(PUSH_UNAVAILABLE[support]);
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') {
    throw new Error(permission === 'denied' ? 'Notifications are blocked for this page: allow them in the browser\'s site settings, then tap the bell again.' : 'Notifications were not allowed.');
  }
  try {
    await subscribe(token);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new Error(`This browser could not subscribe to push notifications (${err instanceof Error ? err.message : String(err)}).`);
  }
  localStore.write(PUSH_ON_KEY, true);
}

/** The bell tapped off: the relay forgets this browser, and the browser its subscription. */
export async function turnPushOff(token: string | null): Promise<void> {
  localStore.remove(PUSH_ON_KEY);
  if (pushSupport() !== 'ok') return;
  const subscription = await (await navigator.serviceWorker.ready).pushManager.getSubscription();
  if (!subscription) return;
  if (token) await relayJson(token, 'DELETE', PUSH_PATHS.pushSubscriptions, { endpoint: subscription.endpoint }).catch(() => {});
  await subscription.unsubscribe();
}

/** After a (re)connection: a new token on the desktop has no subscriptions, so post ours again. Never prompts. */
export async function renewPush(token: string): Promise<boolean> {
  if (!pushWanted() || pushSupport() !== 'ok' || Notification.permission !== 'granted') return false;
  await subscribe(token);
  return true;
}
