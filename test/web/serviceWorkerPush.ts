/**
 * Pushes delivered to the app's service worker as the browser's push service would deliver them
 * (the DevTools protocol's ServiceWorker.deliverPushMessage), and the notifications it then shows.
 *
 * A test must not read `registration.getNotifications()` while a push is still being handled.
 * Chromium answers it from its notification database and deletes, as already closed by the user,
 * every stored notification the screen does not list at that moment
 * (PlatformNotificationContextImpl::DoReadAllNotificationDataForServiceWorkerRegistration). A read
 * that starts while a `showNotification()` is between the database and the screen therefore
 * deletes that notification: it is shown, but never listed again. test/web/push.test.ts polled
 * getNotifications() while the worker handled its push, and on a loaded machine now and then
 * waited for a notification its own poll had deleted. So deliver() returns only once the worker
 * has finished with the push (every promise its handler gave `event.waitUntil` settled), and
 * the notifications are read after that.
 */
import type { BrowserContext, Page, Worker } from 'playwright-core';
import { expect } from 'vitest';

export interface ShownNotification {
  title: string;
  tag: string;
  data: unknown;
}

export interface ServiceWorkerPush {
  /** The app's service worker (the one the pushes go to). */
  worker: Worker;
  /** Delivers one push whose payload is `data` as JSON, and resolves once the worker has finished handling it. */
  deliver(data: unknown): Promise<void>;
  /** The notifications the worker's registration shows, read between pushes (see above). */
  notifications(): Promise<ShownNotification[]>;
}

interface Registration {
  registrationId: string;
  scopeURL: string;
  isDeleted: boolean;
}

/**
 * Pushes to the service worker registered for `appUrl` in `context`, through a DevTools session
 * on `page` (a page that stays open while the test closes the app's pages, if it does).
 */
export async function serviceWorkerPush(context: BrowserContext, page: Page, appUrl: string): Promise<ServiceWorkerPush> {
  const cdp = await context.newCDPSession(page);
  const registrations: Registration[] = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e: { registrations: Registration[] }) => registrations.push(...e.registrations));
  await cdp.send('ServiceWorker.enable');
  const registration = () => registrations.find((r) => !r.isDeleted && r.scopeURL.startsWith(appUrl));
  await expect.poll(() => registration() !== undefined, { message: `a service worker registration for ${appUrl}` }).toBe(true);
  const worker = context.serviceWorkers().find((w) => w.url().startsWith(appUrl)) ?? (await context.waitForEvent('serviceworker', (w) => w.url().startsWith(appUrl)));

  // Counts the push events the worker has finished with. A listener added now runs after the
  // worker's own (listeners run in the order they were added), when its handler has already
  // called waitUntil for this event.
  const handledBefore = await worker.evaluate(() => {
    const scope = globalThis as unknown as {
      __pushesHandled?: number;
      ExtendableEvent: { prototype: { waitUntil(p: Promise<unknown>): void } };
      addEventListener(type: 'push', listener: (event: object) => void): void;
    };
    if (scope.__pushesHandled === undefined) {
      scope.__pushesHandled = 0;
      const pending = new WeakMap<object, Promise<unknown>[]>();
      const waitUntil = scope.ExtendableEvent.prototype.waitUntil;
      scope.ExtendableEvent.prototype.waitUntil = function (this: object, promise: Promise<unknown>) {
        const list = pending.get(this) ?? [];
        list.push(Promise.resolve(promise).catch(() => undefined));
        pending.set(this, list);
        return waitUntil.call(this, promise);
      };
      scope.addEventListener('push', (event) => {
        void Promise.all(pending.get(event) ?? []).then(() => {
          scope.__pushesHandled!++;
        });
      });
    }
    return scope.__pushesHandled;
  });
  let delivered = handledBefore;

  return {
    worker,
    async deliver(data) {
      delivered++;
      await cdp.send('ServiceWorker.deliverPushMessage', {
        origin: new URL(appUrl).origin,
        registrationId: registration()!.registrationId,
        data: JSON.stringify(data),
      });
      const handled = () => worker.evaluate(() => (globalThis as unknown as { __pushesHandled: number }).__pushesHandled);
      await expect.poll(handled, { message: `the service worker handling push ${delivered}` }).toBe(delivered);
    },
    notifications: () =>
      worker.evaluate(async () => {
        const reg = (globalThis as unknown as { registration: ServiceWorkerRegistration }).registration;
        return (await reg.getNotifications()).map((n) => ({ title: n.title, tag: n.tag, data: n.data as unknown }));
      }),
  };
}
