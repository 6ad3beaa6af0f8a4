/**
 * The phone as a device of the desktop (issue 26) in WebKit (WebKitGTK's MiniBrowser over W3C
 * WebDriver, as webkit.test.ts), through the test proxy, which records which token each request
 * carried: pairing registers the phone under its browser's name and every request after that
 * carries its drd_ token; Settings rename it; Unpair removes it; a phone the desk removed says so
 * on the next send and mid-reply.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DeviceInfo } from '../../server/src/protocol';
import { webClientLink } from '../../server/src/session/pairing';
import { defaultDeviceName } from '../../web/src/registration';
import { PHONE_REMOVED_MESSAGE } from '../../web/src/devices';
import { type Desk, useWebKitSuite, sendMessage } from './harness';
import type { TestProxy } from './proxy';
import { clickWhenReady, whenInteractable, type Session, type WebKit } from './webdriver';

let webkit: WebKit;
let desk: Desk;
let proxy: TestProxy;
useWebKitSuite({ mode: 'normal' }, (s) => ({ webkit, desk, proxy } = s), { proxy: true });

async function devices(): Promise<DeviceInfo[]> {
  const res = await fetch(`${desk.relay.url}/v1/devices`, { headers: { Authorization: `Bearer ${desk.relay.token}` } });
  return (await res.json()) as DeviceInfo[];
}

async function revokeAtDesk(id: string): Promise<void> {
  const res = await fetch(`${desk.relay.url}/v1/devices/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${desk.relay.token}` } });
  expect(res.status).toBe(204);
}

const interact = whenInteractable;
const click = clickWhenReady;


const lastNote = (s: Session) => s.exec<string | null>(`const n = document.querySelectorAll('.msg.assistant .note'); return n.length ? n[n.length - 1].textContent : null;`);

/** A WebKit phone paired by the link; the device the desk got for it. */
async function paired(run: (s: Session, device: DeviceInfo) => Promise<void>): Promise<void> {
  const s = await webkit.session();
  try {
    await s.setWindowRect({ width: 375, height: 812 });
    const before = new Set((await devices()).map((d) => d.id));
    await s.go(webClientLink(proxy.url, desk.relay.token));
    await s.waitFor('#chat');
    await expect.poll(() => s.textOf('#conn')).toContain('Connected · ');
    const added = (await devices()).filter((d) => !before.has(d.id));
    expect(added).toHaveLength(1);
    await run(s, added[0]!);
  } finally {
    await s.close();
  }
}

describe('WebKit: the phone as a device', () => {
  it('registers under its browser\'s name; every request after that carries its drd_ token, never the pairing token', async () => {
    await paired(async (s, device) => {
      const name = defaultDeviceName(await s.exec<string>('return navigator.userAgent;'));
      expect(name).toMatch(/ Safari$/);
      expect(device.name).toBe(name);
      const from = proxy.bearers.length;
      await sendMessage(s, 'hello');
      await expect.poll(() => s.textOf('.msg.assistant:last-of-type .reply')).toContain('Hello from Ollama!');
      const registration = proxy.bearers.filter((b) => b.startsWith('POST /v1/devices '));
      expect(registration.at(-1)).toBe(`POST /v1/devices ${desk.relay.token}`);
      const after = proxy.bearers.slice(proxy.bearers.lastIndexOf(registration.at(-1)!) + 1);
      expect(after.some((b) => b.startsWith('GET /v1/remote/info '))).toBe(true);
      expect(proxy.bearers.slice(from).some((b) => b.startsWith('POST /v1/chat/stream '))).toBe(true);
      for (const b of after) expect(b).toMatch(/ drd_[A-Za-z0-9_-]{43}$/);
      const stored = await s.exec<string>('return JSON.stringify(sessionStorage) + JSON.stringify(localStorage);');
      expect(stored).not.toContain(desk.relay.token);
      await revokeAtDesk(device.id);
    });
  });

  it('renames itself in Settings, and Unpair removes it at the desk and shows the pairing screen', async () => {
    await paired(async (s, device) => {
      await click(s, '#menu-open');
      const field = await s.waitFor('#device-name');
      expect(await s.exec<string>('return document.getElementById("device-name").value;')).toBe(device.name);
      // Select it all and type over it, then Enter (WebDriver's clear would blur the field empty: a name kept back).
      await s.exec('const f = document.getElementById("device-name"); f.focus(); f.select();');
      await interact(() => s.type(field, 'My iPhone\uE007'));
      await expect.poll(() => s.textOf('#device-note')).toContain('Saved');
      expect((await devices()).find((d) => d.id === device.id)?.name).toBe('My iPhone');
      await click(s, '#unpair');
      await click(s, '#unpair-yes');
      await s.waitFor('#pair');
      expect((await devices()).some((d) => d.id === device.id)).toBe(false);
    });
  });

  it('removed at the desk: the next send says so, with Pair again', async () => {
    await paired(async (s, device) => {
      await revokeAtDesk(device.id);
      await sendMessage(s, 'still there?');
      await expect.poll(() => lastNote(s)).toContain(PHONE_REMOVED_MESSAGE);
      expect(await s.textOf('#info-warning')).toBe(PHONE_REMOVED_MESSAGE);
      await click(s, '.msg.assistant:last-of-type .note button.pair-again');
      await s.waitFor('#pair');
    });
  });

  it('removed at the desk mid-reply: the stream ends with the removal', async () => {
    await paired(async (s, device) => {
      desk.ollama.set({ mode: 'normal', chunkDelayMs: 250, reply: 'one two three four five six seven eight nine ten eleven twelve'.split(' ').map((w) => `${w} `) });
      try {
        await sendMessage(s, 'count slowly');
        await expect.poll(() => s.textOf('.msg.assistant:last-of-type .reply')).toContain('two');
        await revokeAtDesk(device.id);
        await expect.poll(() => lastNote(s), { timeout: 10_000 }).toContain(PHONE_REMOVED_MESSAGE);
        expect(await s.textOf('.msg.assistant:last-of-type .reply')).not.toContain('twelve');
      } finally {
        desk.ollama.set({ mode: 'normal' });
      }
    });
  });
});

/** What the page keeps in IndexedDB (issue 36): the device's id and token, and whether its private key can be read out. */
const KEPT = `return (async () => {
  const db = await new Promise((resolve, reject) => { const r = indexedDB.open('deskrelay-device'); r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
  const get = (k) => new Promise((resolve) => { if (!db.objectStoreNames.contains('kept')) return resolve(null); const r = db.transaction('kept').objectStore('kept').get(k); r.onsuccess = () => resolve(r.result ?? null); r.onerror = () => resolve(null); });
  const device = await get('device');
  const keys = await get('keys');
  const exported = keys ? await crypto.subtle.exportKey('jwk', keys.privateKey).then(() => 'exported', (e) => e.name) : 'no key';
  db.close();
  return JSON.stringify({ id: device && device.id, token: device && device.token, extractable: keys && keys.privateKey.extractable, exported, web: JSON.stringify(localStorage) + JSON.stringify(sessionStorage) });
})();`;

describe('WebKit: the phone keeps its device (issue 36)', () => {
  it('paired by the link, opened again at /: still paired, the device and a non-extractable key in IndexedDB, nothing in web storage', async () => {
    await paired(async (s, device) => {
      await s.go(`${proxy.url}/`);
      await s.waitFor('#chat');
      await expect.poll(() => s.textOf('#conn')).toContain('Connected · ');
      const kept = JSON.parse(await s.exec<string>(KEPT)) as { id: string; token: string; extractable: boolean; exported: string; web: string };
      expect(kept).toMatchObject({ id: device.id, extractable: false });
      expect(kept.exported).not.toBe('exported');
      expect(kept.token).toMatch(/^drd_/);
      expect(kept.web).not.toMatch(/dr_|drd_/);
      expect((await devices()).find((d) => d.id === device.id)).toMatchObject({ hasKey: true });
      await revokeAtDesk(device.id);
    });
  });

  it('an installed-app start at / pairs with a pairing code', async () => {
    const deskToken = readFileSync(join(desk.relay.dir, 'desk-token'), 'utf8').trim();
    const issued = await fetch(`${desk.relay.url}/v1/devices/codes`, { method: 'POST', headers: { Authorization: `Bearer ${deskToken}` } });
    expect(issued.status).toBe(201);
    const { code } = (await issued.json()) as { code: string };
    const s = await webkit.session();
    try {
      await s.setWindowRect({ width: 375, height: 812 });
      await s.go(`${proxy.url}/`);
      await s.waitFor('#pair');
      const field = await s.waitFor('#pair-code');
      await interact(() => s.type(field, code.toLowerCase()));
      await click(s, '#code-submit');
      await s.waitFor('#chat');
      await expect.poll(() => s.textOf('#conn')).toContain('Connected · ');
      const kept = JSON.parse(await s.exec<string>(KEPT)) as { id: string };
      expect((await devices()).find((d) => d.id === kept.id)).toMatchObject({ hasKey: true });
      await revokeAtDesk(kept.id);
    } finally {
      await s.close();
    }
  });
});
