/**
 * Chats the desktop keeps (`keepConversations` on), on a phone used every day (issue 38), in
 * Chromium at 375×812: the drawer says which chats are on the desktop and which only on this
 * phone, offers to move the phone's own to the desktop, Settings says where new chats go, and a
 * reply's thinking time is still there after a reload.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { bearer, send as http } from '../helpers/http';
import { axe, launchBrowser, phone, replyFinished, SCREENSHOTS, send, startDesk, type Desk } from './harness';

let browser: Browser;
let desk: Desk;
let keep = true;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
  desk = await startDesk({ mode: 'normal' }, { keepConversations: () => keep });
}, 60_000);
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
  keep = true;
  const list = await http(desk.relay.url, '/v1/conversations', { headers: bearer(desk.relay.token) });
  for (const c of list.json?.conversations ?? []) await http(desk.relay.url, `/v1/conversations/${c.id}`, { method: 'DELETE', headers: bearer(desk.relay.token) });
});
afterAll(async () => {
  await browser?.close();
  await desk?.close();
});

async function open(): Promise<Page> {
  const p = await phone(browser);
  closers.push(async () => {
    await p.context.close();
    expect(p.console.filter((l) => l.startsWith('pageerror'))).toEqual([]);
  });
  await p.page.goto(webClientLink(desk.relay.url, desk.relay.token));
  await p.page.locator('#chat').waitFor();
  await expect.poll(() => p.page.locator('#status-dot').getAttribute('class')).toContain('ok');
  return p.page;
}

describe('thought time on the desktop\'s chats', () => {
  it('"Thought for N s" reads the same after a reload, when the desktop keeps the chat', async () => {
    desk.ollama.set({ mode: 'thinking', thinking: ['Let', ' me', ' think', ' about', ' it', ' for', ' a', ' while'], chunkDelayMs: 300, reply: ['The', ' answer.'] });
    const page = await open();
    await send(page, 'Think first');
    await replyFinished(page, 20_000);
    const summary = page.locator('.msg.assistant').last().locator('details.thinking summary');
    const before = await summary.textContent();
    expect(before).toMatch(/^Thought for [2-9] s$/);
    // The desktop's copy changed (its reply): the list reads it again before the reload.
    await page.waitForTimeout(1500);
    await page.reload();
    await expect.poll(() => summary.textContent().catch(() => '')).toMatch(/^Thought/);
    expect(await summary.textContent()).toBe(before);
  });
});

describe('chats kept on the desktop are labelled truthfully', () => {
  it('the drawer shows the desktop\'s chats and this phone\'s own apart, moves the phone\'s own there, and Settings says where new chats go', async () => {
    desk.ollama.set({ mode: 'normal', reply: ['Fine.'] });
    // A chat made while the desktop did not keep chats: on this phone only.
    keep = false;
    const page = await open();
    await send(page, 'Phone only chat');
    await replyFinished(page);
    keep = true;
    await page.reload();
    await page.locator('#chat').waitFor();
    await expect.poll(() => page.locator('#history-kept').getAttribute('hidden')).toBeNull();
    await page.getByRole('button', { name: 'New chat' }).click();
    await send(page, 'Desktop chat');
    await replyFinished(page);
    await page.getByRole('button', { name: 'Chats', exact: true }).click();
    const list = page.locator('#chat-list');
    await expect.poll(() => list.locator('h3').allTextContents()).toEqual(['On the desktop', 'Only on this phone']);
    const order = await list.locator('h3, .chat-title').allTextContents();
    expect(order).toEqual(['On the desktop', 'Desktop chat', 'Only on this phone', 'Phone only chat']);
    expect(await axe(page)).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}/daily-desktop-drawer.png` });
    await list.getByRole('button', { name: 'Move it to the desktop' }).click();
    await expect.poll(() => list.locator('h3').allTextContents()).toEqual(['On the desktop']);
    const kept = await http(desk.relay.url, '/v1/conversations', { headers: bearer(desk.relay.token) });
    expect(kept.json.conversations.map((c: { title: string }) => c.title).sort()).toEqual(['Desktop chat', 'Phone only chat']);
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Settings', exact: true }).click();
    expect(await page.locator('#chats-where').textContent()).toMatch(/^New chats are kept on the desktop \(deskrelay-desktop\): every phone paired with it sees them\./);
  });
});
