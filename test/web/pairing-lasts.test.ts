/**
 * A phone that stays paired (issue 36), in Chromium at 375 px against the real relay behind the
 * test proxy (one origin across relay restarts, as a tunnel's URL is): pairing registers the phone
 * with a public key and keeps its device and non-extractable key in IndexedDB (the pairing token
 * nowhere); a new page at `/` (the installed app) opens paired, also after the relay restarts;
 * a restart, a rotation and a removal at the desk are each worded as what they are.
 */
import { webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { registrationMessage, type DeviceInfo } from '../../server/src/protocol';
import { UNREACHABLE_MESSAGE } from '../../web/src/api';
import { CODE_MESSAGES } from '../../web/src/claim';
import { PHONE_FORGOTTEN_MESSAGE, PHONE_REMOVED_MESSAGE } from '../../web/src/devices';
import { launchBrowser, lastReply, openSettings, phone, replyFinished, SCREENSHOTS, send, startDesk, type Desk } from './harness';
import { startProxy, type TestProxy } from './proxy';

let browser: Browser;
let desk: Desk;
let proxy: TestProxy;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
  desk = await startDesk({ mode: 'normal' }, { rememberDevices: true });
  proxy = await startProxy(desk.relay.url);
});
afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await desk?.close();
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function openPhone(): Promise<{ context: BrowserContext; page: Page }> {
  const p = await phone(browser);
  cleanups.push(() => p.context.close());
  return p;
}

async function devices(): Promise<DeviceInfo[]> {
  const res = await fetch(`${desk.relay.relay.url}/v1/devices`, { headers: { Authorization: `Bearer ${desk.relay.token}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as DeviceInfo[];
}

const connected = (page: Page) => expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');

/** What the page keeps in IndexedDB: the device record and whether its private key can be read out. */
function kept(page: Page) {
  return page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const r = indexedDB.open('deskrelay-device');
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    const get = (key: string) =>
      new Promise<any>((resolve, reject) => {
        if (!db.objectStoreNames.contains('kept')) return resolve(undefined);
        const r = db.transaction('kept').objectStore('kept').get(key);
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
    const device = await get('device');
    const keys = await get('keys');
    let exported = 'no key';
    if (keys) exported = await crypto.subtle.exportKey('jwk', keys.privateKey).then(() => 'exported', (e: Error) => e.name);
    db.close();
    return {
      device: device ? { id: device.id as string, token: device.token as string } : null,
      privateKey: keys ? { extractable: keys.privateKey.extractable as boolean, type: keys.privateKey.type as string, exported } : null,
      webStorage: JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }),
    };
  });
}

type SentKey = { name: string; publicKey?: { kty: string; crv: string; x: string; y: string }; proof?: { issuedAt: string; signature: string } };

/** Whether a registration's proof is its key's signature over its name and issuedAt, made just now (docs/devices.md). */
async function proves({ name, publicKey, proof }: SentKey): Promise<boolean> {
  if (!publicKey || !proof || Math.abs(Date.parse(proof.issuedAt) - Date.now()) > 60_000) return false;
  const key = await webcrypto.subtle.importKey('jwk', publicKey, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
  const message = new TextEncoder().encode(registrationMessage(publicKey.x, publicKey.y, name, proof.issuedAt));
  return webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, Buffer.from(proof.signature, 'base64url'), message);
}

/** Pairs `page` by the desk's link through the proxy; resolves with the registration's body and this phone's device. */
async function pairByLink(page: Page): Promise<{ body: SentKey; device: DeviceInfo }> {
  const before = new Set((await devices()).map((d) => d.id));
  const registration = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/v1/devices');
  await page.goto(webClientLink(proxy.url, desk.relay.token));
  const body = (await registration).postDataJSON() as SentKey;
  await page.locator('#chat').waitFor();
  await connected(page);
  const added = (await devices()).filter((d) => !before.has(d.id));
  expect(added).toHaveLength(1);
  return { body, device: added[0]! };
}

/** A desk that does not keep devices (as after a rotation that forgot them), behind its own proxy; closed after the test. */
async function forgetfulDesk(): Promise<{ forgetful: Desk; front: TestProxy }> {
  const forgetful = await startDesk({ mode: 'normal' }, { rememberDevices: false });
  const front = await startProxy(forgetful.relay.url);
  cleanups.push(() => forgetful.close(), () => front.close());
  return { forgetful, front };
}

async function revokeAtDesk(id: string): Promise<void> {
  const res = await fetch(`${desk.relay.relay.url}/v1/devices/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${desk.relay.token}` } });
  expect(res.status).toBe(204);
}

describe('the phone keeps its device', () => {
  it('pair by link, close the page, open / in a new page: still paired, with the device and a non-extractable key in IndexedDB and no token in web storage', async () => {
    const { context, page } = await openPhone();
    const { body, device } = await pairByLink(page);
    expect(body.publicKey).toEqual({ kty: 'EC', crv: 'P-256', x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), y: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    expect(await proves(body)).toBe(true);
    const stored = await kept(page);
    expect(stored.device?.id).toBe(device.id);
    expect(stored.device?.token).toMatch(/^drd_/);
    expect(stored.privateKey).toEqual({ extractable: false, type: 'private', exported: 'InvalidAccessError' });
    expect(stored.webStorage).not.toMatch(/dr_|drd_/);
    expect(JSON.stringify(stored)).not.toContain(desk.relay.token);
    await page.close();

    // The installed app: `/`, no token in the address.
    const app = await context.newPage();
    await app.goto(`${proxy.url}/`);
    await app.locator('#chat').waitFor();
    await connected(app);
    await send(app, 'hello again');
    await replyFinished(app);
    expect(await lastReply(app).textContent()).toContain('Hello');
    expect((await devices()).filter((d) => d.id === device.id)).toHaveLength(1);
    await revokeAtDesk(device.id);
  });

  it('a pairing kept by an earlier version (web storage) moves to IndexedDB and leaves web storage', async () => {
    const { context, page } = await openPhone();
    const { device } = await pairByLink(page);
    const { device: keptDevice } = await kept(page);
    // As the client before issue 36 kept it with "Remember this desktop".
    await page.evaluate(async (d) => {
      localStorage.setItem('deskrelay.pairing', JSON.stringify({ url: location.origin, token: d.token, deviceId: d.id, deviceName: 'Old phone' }));
      await new Promise<void>((resolve) => {
        const r = indexedDB.deleteDatabase('deskrelay-device');
        r.onsuccess = r.onerror = r.onblocked = () => resolve();
      });
    }, keptDevice!);
    await page.close();
    const app = await context.newPage();
    await app.goto(`${proxy.url}/`);
    await connected(app);
    const moved = await kept(app);
    expect(moved.device).toEqual(keptDevice);
    expect(moved.webStorage).not.toContain('drd_');
    await revokeAtDesk(device.id);
  });
});

describe('a restart, a rotation and a removal, each worded as what it is', () => {
  it('restart the relay (same config dir): unreachable while it is down, still paired after, and a chat works', async () => {
    const { page } = await openPhone();
    const { device } = await pairByLink(page);
    await desk.relay.relay.stop();
    await openSettings(page);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect.poll(() => page.locator('#conn').textContent()).toBe('Desktop unreachable');
    expect(await page.locator('#info-warning').textContent()).toBe(UNREACHABLE_MESSAGE);
    expect(await page.locator('#pair').isHidden()).toBe(true);

    const restarted = await desk.relay.relay.start();
    proxy.retarget(restarted.url);
    const app = await page.context().newPage();
    await app.goto(`${proxy.url}/`);
    await connected(app);
    await send(app, 'after the restart');
    await replyFinished(app);
    expect(await lastReply(app).textContent()).toContain('Hello');
    expect((await devices()).map((d) => d.id)).toContain(device.id);
    await revokeAtDesk(device.id);
  });

  it('a tunnel answering 502 for a relay that is down says unreachable and keeps the device', async () => {
    const { context, page } = await openPhone();
    const { device } = await pairByLink(page);
    await page.close();
    const app = await context.newPage();
    // cloudflared's own error page while the relay behind it restarts.
    await app.route('**/v1/remote/info', (route) => route.fulfill({ status: 502, contentType: 'text/html', body: '<html><body>Bad gateway</body></html>' }));
    await app.goto(`${proxy.url}/`);
    await expect.poll(() => app.locator('#conn').textContent()).toBe('Desktop unreachable');
    expect(await app.locator('#pair').isHidden()).toBe(true);
    expect((await kept(app)).device?.id).toBe(device.id);
    await revokeAtDesk(device.id);
  });

  it('the desk forgot its devices (token rotated): the phone says so, not that it was removed', async () => {
    const { forgetful, front } = await forgetfulDesk();
    const { page } = await openPhone();
    await page.goto(webClientLink(front.url, forgetful.relay.token));
    await connected(page);
    await forgetful.relay.relay.stop();
    front.retarget((await forgetful.relay.relay.start()).url);
    await page.reload();
    await page.locator('#pair').waitFor();
    expect(await page.locator('#pair-error').textContent()).toBe(PHONE_FORGOTTEN_MESSAGE);
    expect((await kept(page)).device).toBeNull();
  });

  it('removed at the desk: "This phone was removed at the desk", no Retry, the device forgotten on the phone', async () => {
    const { page } = await openPhone();
    const { device } = await pairByLink(page);
    await revokeAtDesk(device.id);
    await send(page, 'anyone there?');
    const note = page.locator('.msg.assistant').last().locator('.note');
    await expect.poll(() => note.textContent()).toContain(PHONE_REMOVED_MESSAGE);
    expect(PHONE_REMOVED_MESSAGE).toMatch(/^This phone was removed at the desk\./);
    expect(await note.getByRole('button', { name: 'Retry' }).count()).toBe(0);
    expect(await note.getByRole('button', { name: 'Pair again' }).isVisible()).toBe(true);
    await expect.poll(async () => (await kept(page)).device).toBeNull();
    // The app opened again starts at the pairing screen.
    await page.reload();
    await page.locator('#pair').waitFor();
  });
});

/** A one-time pairing code, as `deskrelay pair` gets it from the desk (the desk token in the config dir). */
async function pairingCode(d: Desk): Promise<string> {
  const deskToken = readFileSync(join(d.relay.dir, 'desk-token'), 'utf8').trim();
  const res = await fetch(`${d.relay.relay.url}/v1/devices/codes`, { method: 'POST', headers: { Authorization: `Bearer ${deskToken}` } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { code: string }).code;
}

describe('pairing again, and pairing in the installed app', () => {
  it('the link scanned again while the check of the kept device fails (the network, a busy desk): the kept device stays, nothing registered', async () => {
    const { page } = await openPhone();
    const { device } = await pairByLink(page);
    const first = (await kept(page)).device!;
    const registrations: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/v1/devices') registrations.push(r.url());
    });
    // The first check of the kept token fails as a dropped connection does; the rest go through.
    let dropped = 0;
    await page.route(/\/v1\/remote\/info$/, (route) => (dropped++ === 0 ? route.abort('connectionreset') : route.continue()));
    await page.goto(webClientLink(proxy.url, desk.relay.token));
    await connected(page);
    expect(dropped).toBeGreaterThan(1);
    expect(registrations).toEqual([]);
    expect((await kept(page)).device).toEqual(first);
    await page.unroute(/\/v1\/remote\/info$/);
    await revokeAtDesk(device.id);
  });

  it('pair the same phone again (the link scanned again): still one device; its kept token goes on working, nothing registered', async () => {
    const { page } = await openPhone();
    const { device } = await pairByLink(page);
    const first = (await kept(page)).device!;
    const count = (await devices()).length;
    const registrations: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/v1/devices') registrations.push(r.url());
    });
    for (let i = 0; i < 3; i++) {
      await page.goto(webClientLink(proxy.url, desk.relay.token));
      await connected(page);
    }
    expect(registrations).toEqual([]);
    expect((await kept(page)).device).toEqual(first);
    expect((await devices()).length).toBe(count);
    expect((await devices()).filter((d) => d.id === device.id)).toHaveLength(1);
    await revokeAtDesk(device.id);
  });

  it('pair again after the desk forgot its devices (token rotated): the phone registers with the key it kept, and is one device', async () => {
    const { forgetful, front } = await forgetfulDesk();
    const { page } = await openPhone();
    const registered: SentKey[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/v1/devices') registered.push(r.postDataJSON());
    });
    await page.goto(webClientLink(front.url, forgetful.relay.token));
    await connected(page);
    await forgetful.relay.relay.stop();
    const again = await forgetful.relay.relay.start();
    front.retarget(again.url);
    await page.goto(webClientLink(front.url, again.token));
    await connected(page);
    // "Connected · …" can show from the pairing token's check before the registration is sent.
    await expect.poll(() => registered.length).toBe(2);
    expect(registered[1]!.publicKey).toEqual(registered[0]!.publicKey);
    // A fresh proof each time: the first one, sent again, would be refused as used.
    expect(registered[1]!.proof).not.toEqual(registered[0]!.proof);
    const res = await fetch(`${again.url}/v1/devices`, { headers: { Authorization: `Bearer ${again.token}` } });
    expect(((await res.json()) as DeviceInfo[]).map((d) => d.id)).toEqual([(await kept(page)).device!.id]);
  });

  it('an installed-app start at / pairs with a code typed in any case, and says a wrong code in plain words', async () => {
    const { page } = await openPhone();
    await page.goto(`${proxy.url}/`);
    await page.locator('#pair').waitFor();
    await page.getByRole('button', { name: 'Scan the QR code' }).waitFor();
    const field = page.getByLabel('Enter a pairing code');
    await field.fill('ABCD-EFGH');
    await page.getByRole('button', { name: 'Pair with this code' }).click();
    await expect.poll(() => page.locator('#code-error').textContent()).toBe(CODE_MESSAGES.invalid);
    await field.fill('abc');
    await page.getByRole('button', { name: 'Pair with this code' }).click();
    await expect.poll(() => page.locator('#code-error').textContent()).toBe(CODE_MESSAGES.format);
    await page.screenshot({ path: join(SCREENSHOTS, 'pair-code.png') });

    const code = await pairingCode(desk);
    const claim = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/v1/devices/claim');
    await field.fill(`${code.slice(0, 4).toLowerCase()} ${code.slice(4).toLowerCase()}`);
    await page.getByRole('button', { name: 'Pair with this code' }).click();
    const sent = (await claim).postDataJSON() as SentKey & { code: string; token?: unknown };
    expect(sent).toEqual({ code, name: 'Android Chrome', publicKey: { kty: 'EC', crv: 'P-256', x: expect.any(String), y: expect.any(String) }, proof: { issuedAt: expect.any(String), signature: expect.any(String) } });
    expect(await proves(sent)).toBe(true);
    expect((await claim).headers().authorization).toBeUndefined();
    await page.locator('#chat').waitFor();
    await connected(page);
    const mine = (await kept(page)).device!;
    expect((await devices()).find((d) => d.id === mine.id)).toMatchObject({ hasKey: true });
    await page.reload();
    await connected(page);
    await revokeAtDesk(mine.id);
  });

  it('too many wrong codes: the wait is said in plain words (429, Retry-After)', async () => {
    const other = await startDesk({ mode: 'normal' });
    cleanups.push(() => other.close());
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${other.relay.url}/v1/devices/claim`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code: 'WRONG234', name: 'x' }) });
      expect(res.status).toBe(401);
    }
    const { page } = await openPhone();
    await page.goto(`${other.relay.url}/`);
    await page.getByLabel('Enter a pairing code').fill('WRONG234');
    await page.getByRole('button', { name: 'Pair with this code' }).click();
    await expect.poll(() => page.locator('#code-error').textContent()).toMatch(/^Too many wrong codes were tried\. Wait \d+ seconds, then try again\.$/);
  });
});

describe('Settings → Devices', () => {
  it('lists every device with this one marked; removing another is refused with the desk\'s words until the desk allows this phone the agent, then done', async () => {
    const lost = await openPhone();
    const { device: lostDevice } = await pairByLink(lost.page);
    const { page } = await openPhone();
    const { device } = await pairByLink(page);
    await openSettings(page);
    const rows = page.locator('#device-list li');
    await expect.poll(() => rows.count()).toBe((await devices()).length);
    const me = page.locator(`#device-list li[data-device-id="${device.id}"]`);
    expect(await me.textContent()).toContain('This phone');
    expect(await me.getByRole('button', { name: /Remove/ }).count()).toBe(0);
    const other = page.locator(`#device-list li[data-device-id="${lostDevice.id}"]`);
    expect(await other.textContent()).not.toContain('This phone');
    expect(await other.textContent()).toMatch(/Connected now|Last seen/);
    await page.locator('#devices').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SCREENSHOTS, 'settings-devices.png') });

    const remove = other.getByRole('button', { name: `Remove ${lostDevice.name}` });
    await remove.click();
    expect(await remove.textContent()).toBe('Tap again to remove');
    await remove.click();
    await expect.poll(() => page.locator('#devices-note').textContent()).toMatch(/agent/i);
    expect((await devices()).some((d) => d.id === lostDevice.id)).toBe(true);

    expect(await desk.relay.relay.allowAgent(device.id, true)).toBe(true);
    await remove.click();
    await remove.click();
    await expect.poll(() => page.locator('#devices-note').textContent()).toContain('Removed');
    expect((await devices()).some((d) => d.id === lostDevice.id)).toBe(false);
    expect(await other.count()).toBe(0);
    await revokeAtDesk(device.id);
  });
});
