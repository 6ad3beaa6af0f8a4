/**
 * Never lose a reply (issue 24): the reply in progress is kept on the phone (its key, body, last
 * event id and text) and resumed by the next page, whether the page was reloaded or the tab was
 * discarded; every way a reply can fail says what happened in plain words, keeps the raw line
 * under "Details" and offers Retry, which then works.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { closedPort } from '../helpers/http';
import { startRelay } from '../helpers/relay';
import { lastReply, openProxiedPhone, phone, type ProxiedPhoneSuite, replyFinished, SCREENSHOTS, send, sleep, type Desk, useProxiedPhoneSuite } from './harness';
import type { TestProxy } from './proxy';

let suite: ProxiedPhoneSuite;
let browser: Browser;
let desk: Desk;
let proxy: TestProxy;
const cleanups: (() => Promise<unknown>)[] = [];

useProxiedPhoneSuite((s) => ({ browser, desk, proxy } = suite = s), cleanups);

const PIECES = Array.from({ length: 24 }, (_, i) => `p${i} `);
const FULL = PIECES.join('').trim();

const openPaired = (opts: Parameters<typeof openProxiedPhone>[2] = {}) => openProxiedPhone(suite, cleanups, opts);

const chatCalls = () => desk.ollama.requests.filter((r) => r.path === '/api/chat').length;
const replyText = async (page: Page) => ((await lastReply(page).textContent()) ?? '').trim();
const note = (page: Page) => page.locator('.msg.assistant .note').last();

describe('a reply in progress survives the page', () => {
  it('a reload mid-reply resumes the same reply from where it was (same key, Last-Event-ID), with one provider call', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: PIECES });
    const { page, posts } = await openPaired();
    const calls = chatCalls();
    await send(page, 'A long story, please');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('p4');
    // Kept on the phone while it streams.
    const kept = await page.evaluate(() => JSON.parse(localStorage.getItem('deskrelay.pendingTurn') ?? 'null'));
    expect(kept).toMatchObject({ key: expect.any(String), body: expect.stringContaining('A long story') });

    await page.reload();
    // The earlier text is back at once, then the rest streams in.
    await expect.poll(() => page.locator('.msg.user').count()).toBe(1);
    await replyFinished(page, 15_000);
    expect(await replyText(page)).toBe(FULL);
    expect(await page.locator('.msg.assistant').count()).toBe(1);
    expect(posts.length).toBe(2);
    const [first, second] = await Promise.all(posts.map((r) => r.allHeaders()));
    expect(second!['idempotency-key']).toBe(first!['idempotency-key']);
    // Kept as the page went away: at least the events up to "p4" (ids from 1: p0 is 1, p4 is 5).
    expect(Number(second!['last-event-id'])).toBeGreaterThanOrEqual(5);
    expect(posts[1]!.postData()).toBe(posts[0]!.postData());
    expect(chatCalls()).toBe(calls + 1);
    // Finished: kept with the chat, no longer pending.
    expect(await page.evaluate(() => localStorage.getItem('deskrelay.pendingTurn'))).toBeNull();
    await page.reload();
    await expect.poll(() => replyText(page)).toBe(FULL);
  });

  it('a tab the phone discarded: a new page with the same storage picks the reply up', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: PIECES });
    const { context, page } = await openPaired();
    const calls = chatCalls();
    await send(page, 'Keep going while I switch apps');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('p6');
    await page.close();

    const again = await openPaired({ context });
    await replyFinished(again.page, 15_000);
    expect(await replyText(again.page)).toBe(FULL);
    expect(await again.page.locator('.msg.user').last().textContent()).toContain('Keep going while I switch apps');
    expect(chatCalls()).toBe(calls + 1);
    expect(again.posts.length).toBe(1);
    expect(await again.posts[0]!.headerValue('last-event-id')).not.toBeNull();
  });
});

describe('Retry wherever a reply can fail', () => {
  it('the provider is down: plain words, the raw line under Details, no cursor; Retry works once it is up', async () => {
    const { page } = await openPaired();
    desk.relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: `http://127.0.0.1:${await closedPort()}`, model: 'qwen3' });
    try {
      await send(page, 'Are you there?');
      await expect.poll(() => note(page).locator('.note-text').textContent()).toBe("Your computer can't reach Ollama. Start it, then tap Retry.");
    } finally {
      desk.relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: desk.ollama.url, model: 'qwen3' });
    }
    const details = note(page).locator('details.note-details');
    expect(await details.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
    await details.locator('summary').click();
    expect(await details.locator('code').textContent()).toContain('ECONNREFUSED');
    expect(await page.locator('.msg.assistant .reply.cursor').count()).toBe(0);
    await page.screenshot({ path: join(SCREENSHOTS, 'retry-provider-down.png') });

    desk.ollama.set({ mode: 'normal', reply: ['Here', ' now.'] });
    await note(page).getByRole('button', { name: 'Retry' }).click();
    await replyFinished(page);
    expect(await replyText(page)).toBe('Here now.');
    expect(await page.locator('.msg.assistant').count()).toBe(1);
    expect(await page.locator('.msg.user').count()).toBe(1);
  });

  // The reply tries to resume by itself for 30 s (issue 38) before it says the desktop cannot be reached.
  it('the relay cannot be reached mid-reply: "reconnecting" (never "when the page is visible"), then "Reply interrupted" with Retry', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: PIECES });
    const { page } = await openPaired({ clock: true });
    await send(page, 'Through a tunnel that goes away');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('p2');
    const notes: string[] = [];
    const dots: string[] = [];
    const watching = setInterval(() => {
      void note(page).textContent().then((t) => notes.push(t ?? ''), () => {});
      void page.locator('#status-dot').getAttribute('class').then((c) => dots.push(c ?? ''), () => {});
    }, 100);
    proxy.retarget(`http://127.0.0.1:${await closedPort()}`);
    proxy.cut();
    try {
      // The 30 s of trying pass on the page's clock, 4 s (the longest wait between tries) a step:
      // each step fires the next try to resume, and the network gets real time to refuse it. It
      // must have given up within 80 s.
      const interrupted = () => note(page).locator('.note-title', { hasText: 'Reply interrupted' }).count();
      for (let s = 0; s < 20 && (await interrupted()) === 0; s += 1) {
        await page.clock.fastForward(4000);
        await sleep(150);
      }
      expect(await note(page).locator('.note-title').allTextContents()).toEqual(['Reply interrupted']);
    } finally {
      clearInterval(watching);
      proxy.retarget(desk.relay.url);
    }
    expect(notes.some((t) => t.includes('reconnecting'))).toBe(true);
    expect(dots).toContain('dot connecting');
    expect(notes.filter((t) => /visible/.test(t))).toEqual([]);
    expect(await note(page).locator('.note-text').textContent()).toContain("Your phone can't reach your computer");
    expect(await page.locator('.msg.assistant .reply.cursor').count()).toBe(0);
    // The partial text is still there; the header's dot is red, with a banner saying why.
    expect(await replyText(page)).toContain('p2');
    expect(await page.locator('#status-dot').getAttribute('class')).toBe('dot down');
    expect(await page.locator('#info-warning').textContent()).toContain("Your phone can't reach your computer");
    await page.screenshot({ path: join(SCREENSHOTS, 'retry-unreachable.png') });

    desk.ollama.set({ mode: 'normal', reply: ['Back', ' again.'] });
    await note(page).getByRole('button', { name: 'Retry' }).click();
    await replyFinished(page);
    expect(await replyText(page)).toBe('Back again.');
    expect(await page.locator('.msg.assistant').count()).toBe(1);
    expect(await page.locator('#status-dot').getAttribute('class')).toBe('dot ok');
    expect(await page.locator('#info-warning').isHidden()).toBe(true);
  });

  it('429 (the desktop is busy with other replies): plain words, then Retry works', async () => {
    const busy = await startRelay({ maxConcurrentStreams: () => 1 });
    cleanups.push(() => busy.close());
    busy.useProvider({ id: 'local', kind: 'ollama', baseUrl: desk.ollama.url, model: 'qwen3' });
    // The other client's reply stops mid-way until this phone has been refused: the desktop stays busy however slow the machine.
    desk.ollama.set({ mode: 'normal', reply: PIECES.slice(0, 12), holdAfter: 2 });
    const asked = desk.ollama.requests.length;
    const p = await phone(browser);
    cleanups.push(() => p.context.close());
    await p.page.goto(webClientLink(busy.url, busy.token));
    await p.page.locator('#chat').waitFor();
    // Another client holds the desktop's only stream.
    const other = fetch(`${busy.url}/v1/chat/stream`, { method: 'POST', headers: { Authorization: `Bearer ${busy.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hog' }] }) }).then((r) => r.text());
    // The desktop is writing it once the provider was asked.
    await expect.poll(() => desk.ollama.requests.length).toBe(asked + 1);
    await send(p.page, 'My turn?');
    await expect.poll(() => note(p.page).locator('.note-text').textContent(), { timeout: 10_000 }).toBe('Your computer is already writing other replies. Wait for one to finish, then tap Retry.');
    desk.ollama.release();
    await other;
    desk.ollama.set({ mode: 'normal', reply: ['Your', ' turn.'] });
    await note(p.page).getByRole('button', { name: 'Retry' }).click();
    await replyFinished(p.page);
    expect(await replyText(p.page)).toBe('Your turn.');
  });

  it('the relay stops mid-reply and restarts (a new token): plain words, Retry after pairing again', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: PIECES });
    const { page } = await openPaired();
    await send(page, 'Before the restart');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('p2');
    await desk.relay.relay.stop();
    await expect.poll(() => note(page).locator('.note-text').textContent()).toBe('DeskRelay on your computer stopped. Start it again, then tap Retry.');
    expect(await page.locator('.msg.assistant .reply.cursor').count()).toBe(0);
    await page.screenshot({ path: join(SCREENSHOTS, 'retry-relay-stopped.png') });

    const restarted = await desk.relay.relay.start();
    proxy.retarget(restarted.url);
    // The new pairing link, opened on the phone (the page stays, the chat stays).
    await page.goto(webClientLink(proxy.url, restarted.token));
    await expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');
    desk.ollama.set({ mode: 'normal', reply: ['After', ' the restart.'] });
    await note(page).getByRole('button', { name: 'Retry' }).click();
    await replyFinished(page);
    expect(await replyText(page)).toBe('After the restart.');
    expect(await page.locator('.msg.user').count()).toBe(1);
  });
});
