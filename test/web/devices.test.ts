/**
 * The phone as a device of the desktop (issue 26), in Chromium against the real relay: pairing
 * registers it under the browser's name and every request from then on carries its own drd_
 * token (never the pairing token); Settings rename it and Unpair removes it; a phone the desk
 * removed (through the relay's API, as Manage Devices does) says so, on the next send, mid-reply,
 * on a reload and on Test connection, with the way to pair again.
 */
import { join } from 'node:path';
import type { Page, Request } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import type { DeviceInfo } from '../../server/src/protocol';
import { PHONE_REMOVED_MESSAGE } from '../../web/src/devices';
import { lastReply, openSettings, pairByPaste, pairingJson, replyFinished, SCREENSHOTS, send, setVisibility, usePhoneSuite } from './harness';
import { startProxy } from './proxy';

const { desk, openPhone } = usePhoneSuite({ mode: 'normal' });

/** The harness's phone says "Linux; Android 14; Pixel 8 … Chrome/130.0 Mobile". */
const BROWSER_NAME = 'Android Chrome';

async function devices(): Promise<DeviceInfo[]> {
  const res = await fetch(`${desk.relay.url}/v1/devices`, { headers: { Authorization: `Bearer ${desk.relay.token}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as DeviceInfo[];
}

/** The desk removes a device, as "DeskRelay: Manage Devices" or `deskrelay devices revoke` do. */
async function revokeAtDesk(id: string): Promise<void> {
  const res = await fetch(`${desk.relay.url}/v1/devices/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${desk.relay.token}` } });
  expect(res.status).toBe(204);
}

/** Every API request the page makes: method, path and its bearer token. */
function recordAuth(page: Page): { method: string; path: string; token: string }[] {
  const seen: { method: string; path: string; token: string }[] = [];
  page.on('request', (r: Request) => {
    const url = new URL(r.url());
    if (!url.pathname.startsWith('/v1/')) return;
    seen.push({ method: r.method(), path: url.pathname, token: (r.headers().authorization ?? '').replace(/^Bearer /, '') });
  });
  return seen;
}

/** A paired phone, by the link; resolves with this phone's device as the desk lists it. */
async function pairedPhone(): Promise<{ page: Page; device: DeviceInfo; seen: ReturnType<typeof recordAuth> }> {
  const before = new Set((await devices()).map((d) => d.id));
  const { page } = await openPhone();
  const seen = recordAuth(page);
  await page.goto(webClientLink(desk.relay.url, desk.relay.token));
  await page.locator('#chat').waitFor();
  await expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');
  const added = (await devices()).filter((d) => !before.has(d.id));
  expect(added).toHaveLength(1);
  return { page, device: added[0]!, seen };
}

/** What the phone keeps: web storage and the device record in IndexedDB (issue 36), as one string. */
const storedPairing = (page: Page) =>
  page.evaluate(async () => {
    const g = globalThis as any;
    const db: any = await new Promise((resolve) => {
      const r = g.indexedDB.open('deskrelay-device');
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => resolve(null);
    });
    const device = db?.objectStoreNames.contains('kept')
      ? await new Promise((resolve) => {
          const r = db.transaction('kept').objectStore('kept').get('device');
          r.onsuccess = () => resolve(r.result);
          r.onerror = () => resolve(null);
        })
      : null;
    db?.close();
    return `${JSON.stringify({ ...g.sessionStorage })}${JSON.stringify({ ...g.localStorage })}${JSON.stringify(device ?? null)}`;
  });

describe('pairing registers this phone', () => {
  it('registers under the browser\'s name with the pairing token, then sends only its drd_ token, and keeps no pairing token', async () => {
    const { page, device, seen } = await pairedPhone();
    expect(device).toMatchObject({ name: BROWSER_NAME, connected: true });
    await send(page, 'hello');
    await replyFinished(page);
    expect(await lastReply(page).textContent()).toContain('Hello');

    const registrations = seen.filter((r) => r.method === 'POST' && r.path === '/v1/devices');
    expect(registrations).toHaveLength(1);
    expect(registrations[0]!.token).toBe(desk.relay.token);
    const rest = seen.filter((r) => r !== registrations[0]);
    for (const path of ['/v1/remote/info', '/v1/providers', '/v1/chat/stream']) expect(rest.map((r) => r.path), path).toContain(path);
    for (const r of rest) expect(r.token, `${r.method} ${r.path}`).toMatch(/^drd_[A-Za-z0-9_-]{43}$/);
    expect(new Set(rest.map((r) => r.token)).size).toBe(1);
    // The desk saw the device (not the pairing token) chat.
    expect(Date.parse((await devices()).find((d) => d.id === device.id)!.lastSeen)).toBeGreaterThanOrEqual(Date.parse(device.lastSeen));
    expect(desk.relay.logLines.join('\n')).not.toContain(rest[0]!.token);

    const stored = await storedPairing(page);
    expect(stored).not.toContain(desk.relay.token);
    expect(stored).toContain(rest[0]!.token);
    expect(stored).toContain(device.id);

    await openSettings(page);
    expect(await page.getByLabel("This phone's name on the desktop").inputValue()).toBe(BROWSER_NAME);
    await revokeAtDesk(device.id);
  });

  it('pasting the pairing JSON registers too; a reload keeps the device (no second registration)', async () => {
    const before = (await devices()).length;
    const { page } = await openPhone();
    const seen = recordAuth(page);
    await pairByPaste(page, desk.relay.url, pairingJson(desk.relay.url, desk.relay.token));
    await expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');
    await page.reload();
    await expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');
    const mine = (await devices()).slice(before);
    expect(mine.map((d) => d.name)).toEqual([BROWSER_NAME]);
    expect(seen.filter((r) => r.path === '/v1/devices' && r.method === 'POST')).toHaveLength(1);
    await revokeAtDesk(mine[0]!.id);
  });
});

describe('Settings', () => {
  it('renames this phone on the desktop; the name stays after a reload', async () => {
    const { page, device } = await pairedPhone();
    await openSettings(page);
    const field = page.getByLabel("This phone's name on the desktop");
    await field.fill('  Work phone ');
    await field.press('Enter');
    await expect.poll(() => page.locator('#device-note').textContent()).toContain('Saved');
    await page.locator('#unpair').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SCREENSHOTS, 'settings-device.png') });
    expect((await devices()).find((d) => d.id === device.id)?.name).toBe('Work phone');
    // An empty name is not sent: the old one stays, here and at the desk.
    await field.fill('   ');
    await field.press('Enter');
    await expect.poll(() => page.locator('#device-note').textContent()).toContain('cannot be empty');
    expect(await field.inputValue()).toBe('Work phone');
    await page.reload();
    await openSettings(page);
    expect(await page.getByLabel("This phone's name on the desktop").inputValue()).toBe('Work phone');
    expect((await devices()).find((d) => d.id === device.id)?.name).toBe('Work phone');
    await revokeAtDesk(device.id);
  });

  it('Unpair asks first, then removes this phone at the desk and returns to the pairing screen', async () => {
    const { page, device } = await pairedPhone();
    await openSettings(page);
    await page.getByRole('button', { name: 'Unpair', exact: true }).click();
    expect(await page.locator('#unpair-confirm').isVisible()).toBe(true);
    await page.locator('#unpair-cancel').click();
    expect((await devices()).some((d) => d.id === device.id)).toBe(true);
    await page.getByRole('button', { name: 'Unpair', exact: true }).click();
    await page.locator('#unpair-yes').click();
    await page.locator('#pair').waitFor();
    expect((await devices()).some((d) => d.id === device.id)).toBe(false);
    expect(await page.locator('#pair-error').textContent()).toBe('');
    expect(await storedPairing(page)).not.toContain('drd_');
    // A new tab of the same phone asks to pair.
    await page.reload();
    await page.locator('#pair').waitFor();
  });
});

describe('a phone the desk removed', () => {
  it('says so on the next send, with Pair again leading to the pairing screen', async () => {
    const { page, device } = await pairedPhone();
    await revokeAtDesk(device.id);
    await send(page, 'anyone there?');
    const note = page.locator('.msg.assistant').last().locator('.note');
    await expect.poll(() => note.textContent()).toContain(PHONE_REMOVED_MESSAGE);
    await page.screenshot({ path: join(SCREENSHOTS, 'device-removed.png') });
    expect(await note.getByRole('button', { name: 'Retry' }).count()).toBe(0);
    expect(await page.locator('#info-warning').textContent()).toBe(PHONE_REMOVED_MESSAGE);
    expect(await page.locator('.msg.assistant').last().textContent()).not.toContain('no longer valid');
    await note.getByRole('button', { name: 'Pair again' }).click();
    await page.locator('#pair').waitFor();
    expect(await storedPairing(page)).not.toContain('drd_');
  });

  it('says so mid-reply: the relay ends the stream and the reply shows the removal, not a generic error', async () => {
    const { page, device } = await pairedPhone();
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 250, reply: 'one two three four five six seven eight nine ten eleven twelve'.split(' ').map((w) => `${w} `) });
    try {
      await send(page, 'count slowly');
      await expect.poll(() => lastReply(page).textContent()).toContain('two');
      await revokeAtDesk(device.id);
      const note = page.locator('.msg.assistant').last().locator('.note');
      await expect.poll(() => note.textContent(), { timeout: 10_000 }).toContain(PHONE_REMOVED_MESSAGE);
      expect(await lastReply(page).textContent()).not.toContain('twelve');
      expect(await note.getByRole('button', { name: 'Pair again' }).isVisible()).toBe(true);
      expect(await page.locator('#info-warning').textContent()).toBe(PHONE_REMOVED_MESSAGE);
    } finally {
      desk.ollama.set({ mode: 'normal' });
    }
  });

  it('says so when a cut reply resumes after the desk removed the phone (the resume is refused, not retried)', async () => {
    const proxy = await startProxy(desk.relay.url);
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 150, reply: 'one two three four five six seven eight nine ten eleven twelve'.split(' ').map((w) => `${w} `) });
    try {
      const before = new Set((await devices()).map((d) => d.id));
      const { page } = await openPhone();
      const posts: string[] = [];
      page.on('request', (r) => {
        if (r.method() === 'POST' && r.url().endsWith('/v1/chat/stream')) posts.push(r.headers()['last-event-id'] ?? '');
      });
      await page.goto(webClientLink(proxy.url, desk.relay.token));
      await page.locator('#chat').waitFor();
      await expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');
      const device = (await devices()).find((d) => !before.has(d.id))!;
      await send(page, 'count slowly');
      await expect.poll(() => lastReply(page).textContent()).toContain('two');
      // The screen goes off and the connection drops; meanwhile the desk removes the phone.
      await setVisibility(page, 'hidden');
      proxy.cut();
      // The phone noticed the cut (and waits for the screen to resume it) before the desk acts.
      await expect.poll(() => page.locator('.msg.assistant').last().locator('.note').textContent(), { timeout: 10_000 }).toContain('resume when the page is visible');
      await revokeAtDesk(device.id);
      await setVisibility(page, 'visible');
      const note = page.locator('.msg.assistant').last().locator('.note');
      await expect.poll(() => note.textContent(), { timeout: 10_000 }).toContain(PHONE_REMOVED_MESSAGE);
      expect(posts).toHaveLength(2);
      expect(Number(posts[1])).toBeGreaterThanOrEqual(1);
      expect(await note.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      expect(await note.getByRole('button', { name: 'Pair again' }).isVisible()).toBe(true);
    } finally {
      desk.ollama.set({ mode: 'normal' });
      await proxy.close();
    }
  });

  it('says so on Test connection and when the page comes back: the pairing screen with the removal', async () => {
    const { page, device } = await pairedPhone();
    await revokeAtDesk(device.id);
    await openSettings(page);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.locator('#pair').waitFor();
    expect(await page.locator('#pair-error').textContent()).toBe(PHONE_REMOVED_MESSAGE);

    // Remembered on the phone, removed at the desk while the page was away: it says so at load.
    const second = await pairedPhone();
    await revokeAtDesk(second.device.id);
    await second.page.reload();
    await second.page.locator('#pair').waitFor();
    expect(await second.page.locator('#pair-error').textContent()).toBe(PHONE_REMOVED_MESSAGE);
  });
});
