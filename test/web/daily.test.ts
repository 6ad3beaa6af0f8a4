/**
 * A day with the phone app (issue 38), in Chromium at 375×812 with touch: the header stays while a
 * long reply scrolls and the reply's end can be read above the composer; a stalled or reset
 * connection says so and resumes by itself; ↓ brings a reader who scrolled up back to the end;
 * wide content says it scrolls; words a person uses; thought time kept across a reload.
 * The relay sits behind the test proxy, which can go silent (stall) or refuse connections.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { axe, lastReply, openProxiedPhone, type ProxiedPhoneSuite, replyFinished, SCREENSHOTS, send, sleep, type Desk, useProxiedPhoneSuite } from './harness';
import type { TestProxy } from './proxy';

let suite: ProxiedPhoneSuite;
let desk: Desk;
let proxy: TestProxy;
const cleanups: (() => Promise<unknown>)[] = [];

useProxiedPhoneSuite(
  (s) => ({ desk, proxy } = suite = s),
  cleanups,
  () => {
    proxy.stall(false);
    proxy.refuse = false;
  },
);

async function openChat(opts: Parameters<typeof openProxiedPhone>[2] = {}) {
  // Added before the phone's own cleanup, so it runs once the page closed: nothing the page threw.
  let console: string[] = [];
  cleanups.push(async () => expect(console.filter((l) => l.startsWith('pageerror'))).toEqual([]));
  const p = await openProxiedPhone(suite, cleanups, opts);
  console = p.console;
  await expect.poll(() => p.page.locator('#status-dot').getAttribute('class')).toContain('ok');
  return p;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `daily-${name}.png`) });
const replyText = async (page: Page) => ((await lastReply(page).textContent()) ?? '').trim();
const LONG = Array.from({ length: 40 }, (_, i) => `Line ${i} of a long answer that wraps on a phone.\n\n`);

describe('the header never leaves', () => {
  it('keeps the header at the top after a long reply, and the last reply\'s actions above the composer at the end', async () => {
    const { page } = await openChat();
    desk.ollama.set({ mode: 'normal', reply: LONG });
    await send(page, 'Something long');
    await replyFinished(page);
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await sleep(100);
    const header = await page.locator('header.bar').boundingBox();
    expect(header!.y).toBe(0);
    for (const name of ['Chats', 'New chat', 'Settings']) {
      const b = (await page.getByRole('button', { name, exact: true }).boundingBox())!;
      expect(b.y).toBeGreaterThanOrEqual(0);
      expect(b.y + b.height).toBeLessThanOrEqual(header!.height + 1);
    }
    const actions = (await page.locator('.msg.assistant').last().locator('.msg-actions').boundingBox())!;
    const composer = (await page.locator('#compose .composer').boundingBox())!;
    expect(actions.height).toBeGreaterThan(0);
    expect(actions.y + actions.height).toBeLessThanOrEqual(composer.y);
    expect(actions.y).toBeGreaterThanOrEqual(header!.height);
    await shot(page, 'header-after-long-reply');
  });

  it('moves the composer above the keyboard when the visual viewport shrinks', async () => {
    // Chromium headless has no on-screen keyboard: the page's visualViewport reports one 300 px high.
    const { page } = await openChat({ init: `
      (() => {
        const vv = window.visualViewport;
        let kb = 0;
        Object.defineProperty(vv, 'height', { configurable: true, get: () => window.innerHeight - kb });
        window.__keyboard = (h) => { kb = h; vv.dispatchEvent(new Event('resize')); };
      })();` });
    const before = (await page.locator('#compose .composer').boundingBox())!;
    expect(before.y + before.height).toBeGreaterThan(812 - 300);
    await page.evaluate(() => (window as any).__keyboard(300));
    await expect.poll(async () => {
      const b = (await page.locator('#compose .composer').boundingBox())!;
      return b.y + b.height <= 812 - 300;
    }).toBe(true);
    expect((await page.locator('header.bar').boundingBox())!.y).toBe(0);
    await page.evaluate(() => (window as any).__keyboard(0));
    await expect.poll(async () => ((await page.locator('#compose .composer').boundingBox())!).y).toBe(before.y);
  });
});

describe('a stalled connection never looks healthy', () => {
  const PIECES = Array.from({ length: 40 }, (_, i) => `p${i} `);
  const FULL = PIECES.join('').trim();
  const chatCalls = () => desk.ollama.requests.filter((r) => r.path === '/api/chat').length;
  // The reply stops after "p2" until the test lets it go on: the cut always lands mid-reply, however slow the machine.
  const heldAfterP2 = () => desk.ollama.set({ mode: 'normal', chunkDelayMs: 20, reply: PIECES, holdAfter: 3 });

  it('says "Reconnecting…" when no byte came for 20 s, then finishes the reply by itself once bytes flow, nothing twice', async () => {
    heldAfterP2();
    const { page, posts } = await openChat({ clock: true });
    const calls = chatCalls();
    await send(page, 'Through a tunnel');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('p2');
    // The network goes silent: the socket stays open, nothing arrives (keep-alives included),
    // while the desktop writes the rest of the reply.
    proxy.stall(true);
    desk.ollama.release();
    // Those 20 s pass on the page's clock, at once (the reply's watchdog looks every second).
    await page.clock.fastForward(21_000);
    await expect.poll(() => page.locator('#conn').textContent(), { interval: 250 }).toBe('Reconnecting…');
    expect(await page.locator('#status-dot').getAttribute('class')).toBe('dot connecting');
    await shot(page, 'stalled');
    proxy.stall(false);
    await replyFinished(page, 20_000);
    expect(await replyText(page)).toBe(FULL);
    expect(await page.locator('.msg.assistant.failed').count()).toBe(0);
    expect(await page.locator('#status-dot').getAttribute('class')).toBe('dot ok');
    const [first, second] = await Promise.all(posts.map((r) => r.allHeaders()));
    expect(posts.length).toBe(2);
    expect(second!['idempotency-key']).toBe(first!['idempotency-key']);
    expect(Number(second!['last-event-id'])).toBeGreaterThanOrEqual(3);
    expect(chatCalls()).toBe(calls + 1);
  });

  it('a reset connection with the desktop out of reach for 10 s resumes by itself: no Retry to tap', async () => {
    heldAfterP2();
    const { page } = await openChat({ clock: true });
    const calls = chatCalls();
    await send(page, 'Between two cells');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('p2');
    proxy.refuse = true;
    proxy.cut();
    desk.ollama.release();
    const retries: number[] = [];
    const watching = setInterval(() => void page.locator('.msg.assistant .retry').count().then((n) => retries.push(n), () => {}), 100);
    try {
      // 10 s out of reach on the page's clock, a second at a time: each step fires the next try
      // to resume, and the network gets real time to refuse it.
      for (let s = 0; s < 10; s += 1) {
        await page.clock.fastForward(1000);
        await sleep(150);
      }
      proxy.refuse = false;
      // The next try is due within the longest wait between tries (4 s).
      await page.clock.fastForward(4000);
      await replyFinished(page, 30_000);
    } finally {
      clearInterval(watching);
    }
    expect(retries.filter((n) => n > 0)).toEqual([]);
    expect(await replyText(page)).toBe(FULL);
    expect(await page.locator('.msg.assistant.failed').count()).toBe(0);
    expect(chatCalls()).toBe(calls + 1);
  });

  it('going offline says "Reconnecting…" at once and resumes when the phone is online again', async () => {
    heldAfterP2();
    const { page } = await openChat();
    await send(page, 'On a train');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('p2');
    const context = page.context();
    await context.setOffline(true);
    await expect.poll(() => page.locator('#conn').textContent()).toBe('Reconnecting…');
    desk.ollama.release();
    await sleep(1000);
    await context.setOffline(false);
    await replyFinished(page, 20_000);
    expect(await replyText(page)).toBe(FULL);
    expect(await page.locator('.msg.assistant.failed').count()).toBe(0);
  });
});

describe('jump to the latest', () => {
  it('shows ↓ when the reader scrolled up while a reply streams; ↓ returns to the end and follows again', async () => {
    const { page } = await openChat();
    const lines = Array.from({ length: 80 }, (_, i) => `Line ${i} of a long answer.\n\n`);
    // The reply stops after 30 lines while the reader scrolls; the rest comes once ↓ was tapped.
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 20, reply: lines, holdAfter: 30 });
    await send(page, 'Something long');
    await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('Line 29');
    const jump = page.getByRole('button', { name: 'Jump to the latest' });
    expect(await jump.isVisible()).toBe(false);
    await page.mouse.wheel(0, -1200);
    await expect.poll(() => jump.isVisible()).toBe(true);
    const box = (await jump.boundingBox())!;
    const composer = (await page.locator('#compose .composer').boundingBox())!;
    expect(box.y + box.height).toBeLessThanOrEqual(composer.y);
    await shot(page, 'jump');
    await jump.click();
    const gap = () => page.evaluate(() => {
      const s = document.scrollingElement!;
      return s.scrollHeight - s.scrollTop - s.clientHeight;
    });
    await expect.poll(gap).toBeLessThan(60);
    expect(await jump.isVisible()).toBe(false);
    desk.ollama.release();
    await replyFinished(page, 20_000);
    expect(await replyText(page)).toContain('Line 79');
    expect(await gap()).toBeLessThan(60);
  });
});

describe('wide content says it scrolls', () => {
  it('a code block and a table wider than the screen get a shadow at the cut edge and open full width; narrow ones do not', async () => {
    const { page } = await openChat();
    const longLine = `const message = ${JSON.stringify('x'.repeat(160))};`;
    const table = `| ${Array.from({ length: 9 }, (_, i) => `Column${i}`).join(' | ')} |\n|${' --- |'.repeat(9)}\n| ${Array.from({ length: 9 }, (_, i) => `value-${i}-long`).join(' | ')} |\n`;
    desk.ollama.set({ mode: 'normal', reply: [`Wide:\n\n\`\`\`js\n${longLine}\n\`\`\`\n\nNarrow:\n\n\`\`\`js\nok();\n\`\`\`\n\n${table}`] });
    await send(page, 'Wide things');
    await replyFinished(page);
    const reply = lastReply(page);
    await expect.poll(() => reply.locator('pre.wide').count()).toBe(1);
    expect(await reply.locator('table.wide').count()).toBe(1);
    expect(await reply.locator('pre:not(.wide)').textContent()).toBe('ok();\n');
    expect(await reply.locator('pre.wide').evaluate((e) => getComputedStyle(e).backgroundImage)).toContain('radial-gradient');
    expect(await reply.getByRole('button', { name: 'Open the code full width' }).count()).toBe(1);
    await shot(page, 'wide');
    await reply.getByRole('button', { name: 'Open the table full width' }).click();
    const dialog = page.getByRole('dialog', { name: 'Full width' });
    await dialog.waitFor();
    expect(await dialog.locator('table').textContent()).toContain('value-8-long');
    const box = (await dialog.boundingBox())!;
    expect(box.x).toBe(0);
    expect(box.width).toBe(375);
    expect(await axe(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Close full width' }).click();
    await expect.poll(() => dialog.isHidden()).toBe(true);
  });
});

describe('thought time survives a reload', () => {
  const summary = (page: Page) => page.locator('.msg.assistant').last().locator('details.thinking summary');

  it('"Thought for N s" reads the same after a reload', async () => {
    desk.ollama.set({ mode: 'thinking', thinking: ['Let', ' me', ' think', ' about', ' it', ' for', ' a', ' while'], chunkDelayMs: 300, reply: ['The', ' answer.'] });
    const { page } = await openChat();
    await send(page, 'Think first');
    await replyFinished(page, 20_000);
    const before = await summary(page).textContent();
    expect(before).toMatch(/^Thought for [2-9] s$/);
    await page.reload();
    await expect.poll(() => summary(page).textContent().catch(() => '')).toMatch(/^Thought/);
    expect(await summary(page).textContent()).toBe(before);
  });

  it('a reload in the middle of the thinking keeps counting from when it began', async () => {
    desk.ollama.set({ mode: 'thinking', thinking: Array.from({ length: 14 }, (_, i) => ` step${i}`), chunkDelayMs: 250, reply: ['Done', ' thinking.'] });
    const { page } = await openChat();
    await send(page, 'Think long');
    await expect.poll(() => summary(page).textContent(), { timeout: 10_000 }).toMatch(/^Thinking… [2-9] s$/);
    await page.reload();
    await replyFinished(page, 20_000);
    // About 3.5 s of thinking in all, 2 s or more of it before the reload: not counted from the reload.
    expect(await summary(page).textContent()).toMatch(/^Thought for [3-9] s$/);
  });
});

describe('words a person uses', () => {
  const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

  it('the model bar names the model, the header says "Connected" and the computer, the photo budget has no needless decimals', async () => {
    const { page } = await openChat();
    await expect.poll(() => page.locator('#model-name').textContent()).toBe('qwen3');
    expect(await page.locator('#conn').textContent()).toBe('Connected · deskrelay-desktop');
    await page.locator('#photo-input').setInputFiles([{ name: 'dot.png', mimeType: 'image/png', buffer: PNG_1PX }]);
    await expect.poll(() => page.locator('#photo-budget').textContent()).toBe('1 photo · 0.1 of 9.5 MB');
  });

  it('the chats drawer: Today groups, a search box, one menu per row, titles on at most two lines', async () => {
    const { page } = await openChat();
    const long = 'A very long question about the weather in Lisbon and Porto and Faro over the next three weeks, with the tides too';
    for (const text of ['Groceries for the week', long]) {
      desk.ollama.set({ mode: 'normal', reply: ['Fine.'] });
      await send(page, text);
      await replyFinished(page);
      await page.getByRole('button', { name: 'New chat' }).click();
    }
    await page.getByRole('button', { name: 'Chats', exact: true }).click();
    const list = page.locator('#chat-list');
    await expect.poll(() => list.locator('.chat-title').count()).toBe(2);
    expect(await list.getByRole('heading').allTextContents()).toEqual(['Today']);
    // One menu per row: no Rename or Delete on show until it is opened.
    expect(await list.getByRole('button', { name: /^(Rename|Delete|Export) / }).count()).toBe(0);
    expect(await list.getByRole('button', { name: /^More for / }).count()).toBe(2);
    const lines = await list.locator('.chat-title').first().evaluate((e) => Math.round(e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight)));
    expect(lines).toBe(2);
    await list.getByRole('button', { name: 'More for “Groceries for the week”' }).click();
    expect(await list.getByRole('menuitem').allTextContents()).toEqual(['Rename', 'System prompt', 'Export', 'Delete']);
    await shot(page, 'drawer-menu');
    expect(await axe(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await page.getByLabel('Search chats').fill('grocer');
    expect(await list.locator('.chat-title').allTextContents()).toEqual(['Groceries for the week']);
    await page.getByLabel('Search chats').fill('nothing like it');
    expect(await list.locator('.chat-title').count()).toBe(0);
    expect(await page.locator('#history-empty').textContent()).toBe('No chat matches.');
  });
});

describe('axe-core on the chat screen', () => {
  it('finds nothing serious in light or dark: a reply with wide code streaming (↓ on show) and finished', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const { page } = await openChat({ colorScheme: scheme });
      await page.emulateMedia({ colorScheme: scheme, reducedMotion: 'reduce' });
      const lines = Array.from({ length: 50 }, (_, i) => `Line ${i}.\n\n`);
      // Held after "Line 24" until the streaming screen was checked.
      desk.ollama.set({ mode: 'normal', chunkDelayMs: 20, reply: [`\`\`\`js\nconst x = ${JSON.stringify('y'.repeat(120))};\n\`\`\`\n\n`, ...lines], holdAfter: 26 });
      await send(page, `Colours (${scheme})`);
      await expect.poll(() => replyText(page), { timeout: 10_000 }).toContain('Line 24');
      await page.mouse.wheel(0, -1500);
      await expect.poll(() => page.getByRole('button', { name: 'Jump to the latest' }).isVisible()).toBe(true);
      expect(await lastReply(page).getAttribute('aria-busy')).toBe('true');
      expect(await axe(page), `${scheme} streaming`).toEqual([]);
      desk.ollama.release();
      await replyFinished(page, 20_000);
      expect(await axe(page), `${scheme} finished`).toEqual([]);
      await shot(page, `chat-${scheme}`);
    }
  });
});
