/**
 * The web client over a troubled network: a test proxy between the phone and the relay cuts the
 * connection mid-reply (the screen slept) or holds streamed replies back (a buffering proxy).
 * The client resumes with the same Idempotency-Key and Last-Event-ID when the page is visible
 * again, and falls back to the WebSocket when an SSE stream shows no bytes.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { countRequests, lastReply, LOAD_FAILED_ONCE, openProxiedPhone, type ProxiedPhoneSuite, replyFinished, SCREENSHOTS, send, setVisibility, sleep, type Desk, useProxiedPhoneSuite } from './harness';
import type { TestProxy } from './proxy';

let suite: ProxiedPhoneSuite;
let desk: Desk;
let proxy: TestProxy;
const cleanups: (() => Promise<unknown>)[] = [];

useProxiedPhoneSuite((s) => ({ desk, proxy } = suite = s), cleanups, () => (proxy.holdStreams = false));

const PIECES = Array.from({ length: 16 }, (_, i) => `p${i} `);
const FULL = PIECES.join('').trim();

const openPaired = (init?: string) => openProxiedPhone(suite, cleanups, { init });

function chatCalls() {
  return desk.ollama.requests.filter((r) => r.path === '/api/chat').length;
}

async function replyText(page: Page) {
  return ((await lastReply(page).textContent()) ?? '').trim();
}

describe('resume after the screen slept', () => {
  it('resumes a reply cut while the page was hidden once it is visible again, with one provider call', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: PIECES });
    const { page, context, posts, console } = await openPaired();
    const calls = chatCalls();
    const streamsBefore = countRequests(desk.relay, 'POST', '/v1/chat/stream');

    await send(page, 'Tell me a long story');
    await expect.poll(() => replyText(page)).toContain('p2');

    // The screen goes off: the page is hidden and frozen, and the network drops the connection.
    await setVisibility(page, 'hidden');
    const cdp = await context.newCDPSession(page);
    await cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
    proxy.cut();
    // Frozen a while, as a sleeping phone is.
    await sleep(500);
    await cdp.send('Page.setWebLifecycleState', { state: 'active' });

    // Hidden: the client noticed the cut but waits; the reply is unfinished.
    await expect.poll(() => page.locator('.msg.assistant .note').last().textContent(), { timeout: 10_000 }).toContain('resume');
    expect(await lastReply(page).getAttribute('aria-busy')).toBe('true');
    expect(posts.length).toBe(1);
    const partial = await replyText(page);
    expect(partial).not.toBe(FULL);
    await page.screenshot({ path: join(SCREENSHOTS, 'resume-interrupted.png') });

    // The screen comes back: the same request resumes after the last event seen.
    await setVisibility(page, 'visible');
    await replyFinished(page);
    expect(await replyText(page)).toBe(FULL);
    expect(posts.length).toBe(2);
    const [first, second] = await Promise.all(posts.map((r) => r.allHeaders()));
    expect(second!['idempotency-key']).toBe(first!['idempotency-key']);
    expect(first!['last-event-id']).toBeUndefined();
    expect(Number(second!['last-event-id'])).toBeGreaterThanOrEqual(3);
    expect(posts[1]!.postData()).toBe(posts[0]!.postData());
    expect(chatCalls()).toBe(calls + 1);
    await expect.poll(() => countRequests(desk.relay, 'POST', '/v1/chat/stream')).toBe(streamsBefore + 2);
    await page.screenshot({ path: join(SCREENSHOTS, 'resume-completed.png') });
    expect(console.join('\n')).not.toContain(desk.relay.token);
  });

  it('resumes at once when the connection drops while the page is visible', async () => {
    desk.ollama.set({ mode: 'thinking', thinking: ['Hmm', ' let me see'], chunkDelayMs: 100, reply: PIECES });
    const { page, posts } = await openPaired();
    const calls = chatCalls();
    await send(page, 'Again');
    await expect.poll(() => replyText(page)).toContain('p1');
    proxy.cut();
    await replyFinished(page);
    expect(await replyText(page)).toBe(FULL);
    expect(posts.length).toBe(2);
    expect(chatCalls()).toBe(calls + 1);
    const msg = page.locator('.msg.assistant').last();
    expect(await msg.locator('details.thinking').evaluate((d: any) => d.open)).toBe(false);
    await msg.locator('details.thinking summary').click();
    expect(await msg.locator('.thinking-text').textContent()).toBe('Hmm let me see');
  });
});

describe('WebKit\'s "Load failed"', () => {
  // Every iPhone browser is WebKit, and a fetch WebKit killed (the page went to the background)
  // rejects with `TypeError: Load failed`: a dropped connection like Chromium's, so it resumes.
  it('treats "TypeError: Load failed" mid-reply as a dropped connection and resumes with the same key', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 80, reply: PIECES });
    const { page, posts, console } = await openPaired(LOAD_FAILED_ONCE);
    const calls = chatCalls();
    await send(page, 'Through a flaky radio');
    await replyFinished(page, 15_000);
    expect(await page.evaluate(() => (globalThis as any).__loadFailed)).toBe(1);
    expect(await replyText(page)).toBe(FULL);
    expect(await page.locator('.msg.assistant.failed').count()).toBe(0);
    expect(posts.length).toBe(2);
    const [first, second] = await Promise.all(posts.map((r) => r.allHeaders()));
    expect(second!['idempotency-key']).toBe(first!['idempotency-key']);
    expect(Number(second!['last-event-id'])).toBeGreaterThanOrEqual(1);
    expect(chatCalls()).toBe(calls + 1);
    expect(console.join('\n')).not.toContain(desk.relay.token);
  });
});

describe('WebSocket fallback', () => {
  it('switches to the WebSocket when the SSE stream shows no bytes, and stays on it', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 40, reply: PIECES });
    proxy.holdStreams = true;
    const { page, posts, console } = await openPaired('window.DESKRELAY_WS_AFTER_MS = 400;');
    const wsBefore = countRequests(desk.relay, 'GET', '/v1/chat/ws');
    const protocols: string[] = [];
    page.on('websocket', (ws) => protocols.push(ws.url()));

    await send(page, 'Through a buffering proxy');
    await replyFinished(page, 15_000);
    expect(await replyText(page)).toBe(FULL);
    expect(posts.length).toBe(1);
    expect(protocols).toHaveLength(1);
    expect(protocols[0]).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/v1\/chat\/ws$/);
    await expect.poll(() => countRequests(desk.relay, 'GET', '/v1/chat/ws')).toBeGreaterThan(wsBefore);

    // The next message goes straight to the WebSocket.
    desk.ollama.set({ mode: 'normal', reply: ['Fine', ' again.'] });
    await send(page, 'And again');
    await expect.poll(() => page.locator('.msg.assistant').count()).toBe(2);
    await replyFinished(page);
    expect(await replyText(page)).toBe('Fine again.');
    expect(posts.length).toBe(1);
    expect(protocols).toHaveLength(2);
    await page.screenshot({ path: join(SCREENSHOTS, 'websocket-fallback.png') });
    expect(console.join('\n')).not.toContain(desk.relay.token);
    for (const url of protocols) expect(url).not.toContain(desk.relay.token);
  });

  it('Stop on the WebSocket closes it and the relay aborts the provider request', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 150, reply: PIECES });
    proxy.holdStreams = true;
    const { page } = await openPaired('window.DESKRELAY_WS_AFTER_MS = 300;');
    await send(page, 'Stop me');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('p2');
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => page.locator('.msg.assistant .note').last().textContent()).toContain('Stopped');
    const closed = await Promise.race([desk.ollama.lastRequestClosed.then(() => true), sleep(3000).then(() => false)]);
    expect(closed).toBe(true);
    expect(desk.ollama.lastRequestAborted).toBe(true);
    expect(await replyText(page)).not.toBe(FULL);
  });
});
