/**
 * Chats kept on the phone (issue 12, step 3): IndexedDB on this phone only, a list to open,
 * rename, delete and delete all, titles from the first message, "Keep chats on this phone" (off
 * deletes what is stored and stores nothing more), the pairing kept only with "Remember this
 * desktop" and removed by "Forget this desktop", and a clear message when storage is full.
 */
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { lastReply, pairingJson, replyFinished, SCREENSHOTS, send, usePhoneSuite, openSettings, closeSettings } from './harness';

const { desk, openPhone } = usePhoneSuite({ mode: 'normal' });

async function openLinked(page: Page): Promise<void> {
  await page.goto(webClientLink(desk.relay.url, desk.relay.token));
  await page.locator('#chat').waitFor();
}

async function chatTurn(page: Page, text: string, reply: string): Promise<void> {
  desk.ollama.set({ mode: 'normal', reply: [reply] });
  const before = await page.locator('.msg.assistant').count();
  await send(page, text);
  await expect.poll(() => page.locator('.msg.assistant').count()).toBe(before + 1);
  await replyFinished(page);
  expect((await lastReply(page).textContent())?.trim()).toBe(reply);
}

/** The chats in IndexedDB, read without creating the database when it is not there. */
async function storedChats(page: Page): Promise<{ exists: boolean; chats: any[] }> {
  return page.evaluate(async () => {
    const idb = (globalThis as any).indexedDB;
    const names = ((await idb.databases()) as { name: string }[]).map((d) => d.name);
    if (!names.includes('deskrelay')) return { exists: false, chats: [] };
    // Opening a database the page just deleted would create it again: refuse to create it.
    const db: any = await new Promise((resolve) => {
      const req = idb.open('deskrelay');
      req.onupgradeneeded = () => req.transaction.abort();
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => resolve(undefined);
    });
    if (!db) return { exists: false, chats: [] };
    try {
      if (!db.objectStoreNames.contains('chats')) return { exists: true, chats: [] };
      const chats = await new Promise<any[]>((resolve, reject) => {
        const req = db.transaction('chats').objectStore('chats').getAll();
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
      return { exists: true, chats };
    } finally {
      db.close();
    }
  });
}

const titles = (page: Page) => page.locator('#chat-list .chat-title').allTextContents();

async function openList(page: Page): Promise<void> {
  if (await page.locator('#history').isHidden()) await page.getByRole('button', { name: 'Chats', exact: true }).click();
  await page.locator('#history').waitFor();
}

function chatCalls() {
  return desk.ollama.requests.filter((r) => r.path === '/api/chat');
}

describe('chats kept on this phone', () => {
  it('survive a reload, titled from their first message; a reopened chat goes on with its whole history', async () => {
    const { page } = await openPhone();
    await openLinked(page);
    await chatTurn(page, 'What is the capital of France?', 'Paris.');
    await page.getByRole('button', { name: 'New chat' }).click();
    await expect.poll(() => page.locator('ol.log > li').count()).toBe(0);
    await chatTurn(page, 'Write a haiku about rain', 'Drops on the window.');
    const stored = await storedChats(page);
    expect(stored.chats.map((c) => c.title).sort()).toEqual(['What is the capital of France?', 'Write a haiku about rain']);
    expect(JSON.stringify(stored)).not.toContain(desk.relay.token);

    await page.reload();
    await page.locator('#chat').waitFor();
    // The most recent chat is back on screen.
    await expect.poll(() => page.locator('ol.log > li').count()).toBe(2);
    expect(await page.locator('.msg.user').first().textContent()).toContain('Write a haiku about rain');
    expect((await lastReply(page).textContent())?.trim()).toBe('Drops on the window.');
    await openList(page);
    expect(await titles(page)).toEqual(['Write a haiku about rain', 'What is the capital of France?']);
    await page.screenshot({ path: join(SCREENSHOTS, 'chats-list.png') });

    await page.getByRole('button', { name: /What is the capital of France\?/ }).first().click();
    expect(await page.locator('#history').isHidden()).toBe(true);
    await expect.poll(() => page.locator('.msg.user').first().textContent()).toContain('capital of France');
    await chatTurn(page, 'And of Italy?', 'Rome.');
    const body = chatCalls().at(-1)!.body as { messages: { role: string; content: string }[] };
    expect(body.messages).toEqual([
      { role: 'user', content: 'What is the capital of France?' },
      { role: 'assistant', content: 'Paris.' },
      { role: 'user', content: 'And of Italy?' },
    ]);
    await page.reload();
    await expect.poll(() => page.locator('ol.log > li').count()).toBe(4);
  });

  it('rename, delete and delete all', async () => {
    const { page } = await openPhone('dark');
    await openLinked(page);
    await chatTurn(page, 'alpha question', 'a');
    await page.getByRole('button', { name: 'New chat' }).click();
    await chatTurn(page, 'beta question', 'b');
    await page.getByRole('button', { name: 'New chat' }).click();
    await chatTurn(page, 'gamma question', 'c');
    await openList(page);
    await page.getByRole('button', { name: 'More for “beta question”' }).click();
    await page.getByRole('menuitem', { name: 'Rename “beta question”' }).click();
    await page.getByLabel('Chat title').fill('Renamed beta');
    await page.getByLabel('Chat title').press('Enter');
    await expect.poll(() => titles(page)).toContain('Renamed beta');
    await page.screenshot({ path: join(SCREENSHOTS, 'chats-list-dark.png') });
    await page.reload();
    await openList(page);
    expect(await titles(page)).toContain('Renamed beta');

    await page.getByRole('button', { name: 'More for “alpha question”' }).click();
    await page.getByRole('menuitem', { name: 'Delete “alpha question”' }).click();
    await expect.poll(async () => (await titles(page)).sort()).toEqual(['Renamed beta', 'gamma question']);
    expect((await storedChats(page)).chats.map((c) => c.title).sort()).toEqual(['Renamed beta', 'gamma question']);
    await page.reload();
    await openList(page);
    expect((await titles(page)).sort()).toEqual(['Renamed beta', 'gamma question']);

    // Delete all asks for a second tap.
    await page.getByRole('button', { name: 'Delete all chats' }).click();
    expect((await titles(page)).length).toBe(2);
    await page.getByRole('button', { name: 'Tap again to delete every chat' }).click();
    await expect.poll(() => titles(page)).toEqual([]);
    expect(await page.locator('ol.log > li').count()).toBe(0);
    expect((await storedChats(page)).chats).toEqual([]);
    await page.reload();
    await openList(page);
    expect(await titles(page)).toEqual([]);
    expect(await page.locator('#history-empty').isVisible()).toBe(true);
  });

  it('"Keep chats on this phone" off deletes what is stored and leaves IndexedDB empty from then on', async () => {
    const { page } = await openPhone();
    await openLinked(page);
    expect(await page.getByLabel('Keep chats on this phone').isChecked()).toBe(true);
    await chatTurn(page, 'remember me', 'ok');
    expect((await storedChats(page)).chats).toHaveLength(1);
    await openSettings(page);
    await page.getByLabel('Keep chats on this phone').uncheck();
    await expect.poll(async () => (await storedChats(page)).exists, { timeout: 10_000 }).toBe(false);
    await closeSettings(page);
    // The chat on screen stays for this visit, and the next turn is not stored either.
    await chatTurn(page, 'and this?', 'not kept');
    expect(await page.locator('ol.log > li').count()).toBe(4);
    expect(await storedChats(page)).toEqual({ exists: false, chats: [] });
    await page.reload();
    await page.locator('#chat').waitFor();
    expect(await page.getByLabel('Keep chats on this phone').isChecked()).toBe(false);
    await openList(page);
    expect(await titles(page)).toEqual([]);
    expect(await page.locator('ol.log > li').count()).toBe(0);
    expect(await storedChats(page)).toEqual({ exists: false, chats: [] });
  });

  it('a full phone gets a clear message, and the chat goes on', async () => {
    const { page } = await openPhone();
    await page.addInitScript(() => {
      const proto = (globalThis as any).IDBObjectStore.prototype;
      proto.put = function () {
        throw new (globalThis as any).DOMException('The quota has been exceeded.', 'QuotaExceededError');
      };
    });
    await openLinked(page);
    await chatTurn(page, 'too much', 'fine');
    await expect.poll(() => page.locator('#store-error').textContent()).toContain('no room left to save chats');
    expect(await page.locator('#store-error').isVisible()).toBe(true);
    await page.screenshot({ path: join(SCREENSHOTS, 'storage-full.png') });
  });
});

describe('pairing kept on the phone', () => {
  async function newTab(context: BrowserContext): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${desk.relay.url}/`);
    return page;
  }

  it('is kept on this phone by default (a new tab or the installed app opens paired), and "Forget this desktop" removes it', async () => {
    const { context, page } = await openPhone();
    await page.goto(`${desk.relay.url}/`);
    await page.getByLabel('Pairing JSON').fill(pairingJson(desk.relay.url, desk.relay.token));
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.locator('#chat').waitFor();
    await expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');
    // Nothing in web storage: the device lives in IndexedDB, the pairing token nowhere.
    expect(await page.evaluate(() => JSON.stringify((globalThis as any).localStorage) + JSON.stringify((globalThis as any).sessionStorage))).not.toMatch(/dr_|drd_/);
    const again = await newTab(context);
    await again.locator('#chat').waitFor();
    await expect.poll(() => again.locator('#conn').textContent()).toContain('Connected · ');
    await openSettings(again);
    await again.screenshot({ path: join(SCREENSHOTS, 'settings.png') });

    // Forget this desktop: gone from the phone; the next tab asks to pair again.
    await again.getByRole('button', { name: 'Forget this desktop' }).click();
    await again.locator('#pair').waitFor();
    expect(await again.evaluate(() => JSON.stringify((globalThis as any).localStorage))).not.toContain(desk.relay.token);
    expect(await again.evaluate(() => JSON.stringify((globalThis as any).sessionStorage))).not.toContain(desk.relay.token);
    const third = await newTab(context);
    await third.locator('#pair').waitFor();
  });
});
