/**
 * The web client's push notifications (issue 15), in Chromium: the bell asks for permission only
 * when tapped, subscribes with the desktop's VAPID key and sends the PushSubscription to the
 * relay; the service worker shows "Your reply is ready" for a push; a page opened after the old
 * one was gone (as the notification opens one) brings the chat back and resumes the reply; iOS
 * outside the home-screen app is told why there are no notifications.
 *
 * The browser's own push service (FCM for Chromium) cannot be reached here, so PushManager's
 * subscribe/getSubscription are replaced in the page by a stand-in that records the options and
 * returns a subscription shaped like Chromium's (its endpoint on a host the test relay allows).
 * The relay's side of a real push (VAPID, encryption, delivery) is tested in test/doors/push/push.test.ts;
 * pushes reach the service worker here through the DevTools protocol (./serviceWorkerPush.ts).
 */
import { createECDH, randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, send as http } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { countRequests, ensureVendor, lastReply, launchBrowser, phone, replyFinished, send, sleep, openSettings, closeSettings, swControls } from './harness';
import { serviceWorkerPush } from './serviceWorkerPush';

const PUSH_HOST = 'push.deskrelay.test';
let browser: Browser;
let relay: TestRelay;
let ollama: OllamaStandIn;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ensureVendor();
  browser = await launchBrowser();
  ollama = await startOllamaStandIn();
  relay = await startRelay({ pushHosts: [PUSH_HOST] });
  relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'qwen3' });
});
afterAll(async () => {
  await browser?.close();
  await relay?.close();
  await ollama?.close();
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
  ollama.set({ mode: 'normal' });
});

/** Keys a browser would make for the subscription (p256dh, auth). */
function browserKeys() {
  const ecdh = createECDH('prime256v1');
  return { p256dh: ecdh.generateKeys().toString('base64url'), auth: randomBytes(16).toString('base64url') };
}

/**
 * Replaces PushManager in every page and worker of the context: subscribe records its options and
 * returns a PushSubscription-like object; Notification.requestPermission is counted.
 */
function pushStandIn(endpoint: string, keys: { p256dh: string; auth: string }): string {
  return `(() => {
    const state = { subscribeCalls: [], permissionCalls: 0, unsubscribed: 0 };
    window.__push = state;
    const b64u = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    const unb64u = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)).buffer;
    // Like a browser's, the subscription outlives the page (kept here in localStorage by its key).
    const made = (serverKey) => ({
      endpoint: ${JSON.stringify(endpoint)},
      options: { userVisibleOnly: true, applicationServerKey: unb64u(serverKey) },
      toJSON() { return { endpoint: this.endpoint, expirationTime: null, keys: ${JSON.stringify(keys)} }; },
      async unsubscribe() { state.unsubscribed++; localStorage.removeItem('__pushsub'); return true; },
    });
    PushManager.prototype.getSubscription = async function () {
      const serverKey = localStorage.getItem('__pushsub');
      return serverKey ? made(serverKey) : null;
    };
    PushManager.prototype.subscribe = async function (options) {
      const key = options.applicationServerKey;
      const bytes = key instanceof ArrayBuffer ? key : key.buffer.slice(key.byteOffset, key.byteOffset + key.byteLength);
      state.subscribeCalls.push({ userVisibleOnly: options.userVisibleOnly, applicationServerKey: b64u(bytes) });
      localStorage.setItem('__pushsub', b64u(bytes));
      return made(b64u(bytes));
    };
    const realRequest = Notification.requestPermission.bind(Notification);
    Notification.requestPermission = function () { state.permissionCalls++; return realRequest(); };
  })();`;
}

async function openPhone(options: { ios?: boolean; endpoint?: string } = {}): Promise<{ context: BrowserContext; page: Page; console: string[]; endpoint: string }> {
  const endpoint = options.endpoint ?? `https://${PUSH_HOST}/sub/${randomBytes(6).toString('hex')}`;
  const { context, page, console } = options.ios
    ? await iPhone()
    : await phone(browser);
  cleanups.push(() => context.close());
  await context.grantPermissions(['notifications'], { origin: relay.url });
  await context.addInitScript(pushStandIn(endpoint, browserKeys()));
  return { context, page, console, endpoint };
}

async function iPhone() {
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    isMobile: true,
    hasTouch: true,
    userAgent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  });
  const page = await context.newPage();
  const console: string[] = [];
  page.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
  return { context, page, console };
}

const bell = (page: Page) => page.locator('#push-bell');
const pushState = (page: Page) => page.evaluate(() => (globalThis as any).__push as { subscribeCalls: { userVisibleOnly: boolean; applicationServerKey: string }[]; permissionCalls: number; unsubscribed: number });

async function relayKey(): Promise<string> {
  return (await http(relay.url, '/v1/push/key', { headers: bearer(relay.token) })).json.publicKey;
}

async function pairAndWait(page: Page): Promise<void> {
  await page.goto(webClientLink(relay.url, relay.token));
  await page.locator('#chat').waitFor();
  await swControls(page);
}

describe('the bell', () => {
  it('asks for permission only when tapped, then subscribes with the desktop\'s key and sends the subscription to the relay', async () => {
    const { page, console, endpoint } = await openPhone();
    await pairAndWait(page);
    await openSettings(page);
    await bell(page).waitFor();
    expect(await bell(page).getAttribute('aria-pressed')).toBe('false');
    await sleep(300);
    // Loading and pairing asked nothing.
    expect((await pushState(page)).permissionCalls).toBe(0);
    expect(countRequests(relay, 'POST', '/v1/push/subscriptions')).toBe(0);

    const before = countRequests(relay, 'POST', '/v1/push/subscriptions');
    await openSettings(page);
    await bell(page).click();
    await expect.poll(() => relay.logLines.filter((l) => l.startsWith('request POST /v1/push/subscriptions 201')).length).toBe(before + 1);
    const state = await pushState(page);
    expect(state.permissionCalls).toBe(1);
    expect(state.subscribeCalls).toEqual([{ userVisibleOnly: true, applicationServerKey: await relayKey() }]);
    await expect.poll(() => bell(page).getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator('#push-note').textContent()).toContain('notified');

    // A reload (a new connection) posts the subscription again without asking anything.
    await page.reload();
    await page.locator('#chat').waitFor();
    await expect.poll(() => relay.logLines.filter((l) => l.startsWith('request POST /v1/push/subscriptions 201')).length).toBe(before + 2);
    expect((await pushState(page)).permissionCalls).toBe(0);
    expect((await pushState(page)).subscribeCalls).toHaveLength(0);

    // Off: the relay forgets it, the browser unsubscribes.
    await openSettings(page);
    await bell(page).click();
    await expect.poll(() => countRequests(relay, 'DELETE', '/v1/push/subscriptions')).toBeGreaterThanOrEqual(1);
    await expect.poll(async () => (await pushState(page)).unsubscribed).toBe(1);
    expect(await bell(page).getAttribute('aria-pressed')).toBe('false');
    expect(endpoint).toContain(PUSH_HOST);
    expect(console.filter((l) => l.startsWith('pageerror'))).toEqual([]);
  });

  it('says why when the desktop has push turned off', async () => {
    const { page } = await openPhone();
    await pairAndWait(page);
    const key = await relayKey();
    expect(key).toBeTruthy();
    relay.relay.options.pushNotifications = () => false;
    try {
      await openSettings(page);
      await bell(page).click();
      await expect.poll(() => page.locator('#push-note').textContent()).toContain('turned off on the desktop');
      expect(await bell(page).getAttribute('aria-pressed')).toBe('false');
    } finally {
      relay.relay.options.pushNotifications = () => true;
    }
  });

  it('on an iPhone outside the home-screen app, says notifications need the installed app', async () => {
    const { page } = await openPhone({ ios: true });
    await page.goto(webClientLink(relay.url, relay.token));
    await page.locator('#chat').waitFor();
    await openSettings(page);
    await bell(page).waitFor();
    expect(await bell(page).getAttribute('class')).toContain('unavailable');
    await openSettings(page);
    await bell(page).click();
    expect(await page.locator('#push-note').textContent()).toContain('Add to Home Screen');
    expect((await pushState(page)).permissionCalls).toBe(0);
  });
});

describe('the service worker and the notification', () => {
  it('shows "Your reply is ready" for a reply_ready push when no page of the app is on screen', async () => {
    const { context, page } = await openPhone();
    await pairAndWait(page);
    // The DevTools session lives on another page, which stays when the app's page is closed.
    const push = await serviceWorkerPush(context, await context.newPage(), relay.url);
    const key = 'k'.repeat(22);

    // While the app is on screen it sees the reply end itself: no notification.
    await push.deliver({ type: 'reply_ready', idempotencyKey: key, ok: true });
    expect(await push.notifications()).toEqual([]);

    // The page is gone (the phone dropped it): the notification is shown.
    await page.close();
    await push.deliver({ type: 'reply_ready', idempotencyKey: key, ok: true });
    const ready = { title: 'Your reply is ready', tag: `reply-${key}`, data: { idempotencyKey: key } };
    expect(await push.notifications()).toEqual([ready]);
    const failed = 'e'.repeat(22);
    await push.deliver({ type: 'reply_ready', idempotencyKey: failed, ok: false });
    const byTag = (a: { tag: string }, b: { tag: string }) => a.tag.localeCompare(b.tag);
    expect((await push.notifications()).sort(byTag)).toEqual([{ title: 'Your reply stopped with an error', tag: `reply-${failed}`, data: { idempotencyKey: failed } }, ready].sort(byTag));
  });

  it('a page opened after the old one was gone brings the chat back and resumes its reply (one provider call)', async () => {
    const { context, page } = await openPhone();
    await pairAndWait(page);
    // An app opened from a notification finds the device the phone keeps.
    await openSettings(page);
    await bell(page).click();
    await expect.poll(() => bell(page).getAttribute('aria-pressed')).toBe('true');
    await closeSettings(page);
    const reply = Array.from({ length: 12 }, (_, i) => `part${i} `);
    ollama.set({ mode: 'normal', reply, chunkDelayMs: 80 });
    const calls = () => ollama.requests.filter((r) => r.path === '/api/chat').length;
    const before = calls();
    await send(page, 'Tell me a long story');
    await expect.poll(() => lastReply(page).textContent()).toContain('part1');
    // The phone drops the page (the system killed it while the screen was off).
    await page.close();
    // The notification opens a new window on the app.
    const reopened = await context.newPage();
    await reopened.goto(`${relay.url}/`);
    await replyFinished(reopened, 15_000);
    expect((await lastReply(reopened).textContent())!.trim()).toBe(reply.join('').trim());
    expect(await reopened.locator('.msg.user').last().textContent()).toContain('Tell me a long story');
    expect(calls()).toBe(before + 1);
  });
});
