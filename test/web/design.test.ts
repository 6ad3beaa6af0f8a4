/**
 * The chat screen as a person meets it (issue 24), at iPhone size in Chromium: the empty state,
 * the header (title, status dot, New chat, menu), the settings sheet, the chats drawer with Undo,
 * the composer growing, a table that scrolls instead of breaking words, nothing wider than 320 px,
 * every visible control at least 44 px, and axe-core with no serious or critical violation in
 * light and dark. Screenshots of each state go to test-results/web/design-*.png.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { replyFinished, SCREENSHOTS, send, usePhoneSuite, axe } from './harness';

const suite = usePhoneSuite({ mode: 'normal' });

async function openChat(colorScheme: 'light' | 'dark' = 'light', width = 375): Promise<Page> {
  const { page } = await suite.openPhone(colorScheme);
  // Screenshots of the drawer and sheet at rest, not half-way through their slide.
  await page.emulateMedia({ reducedMotion: 'reduce' });
  if (width !== 375) await page.setViewportSize({ width, height: 740 });
  await page.goto(webClientLink(suite.desk.relay.url, suite.desk.relay.token));
  await page.locator('#chat').waitFor();
  await expect.poll(() => page.locator('#status-dot').getAttribute('class')).toBe('dot ok');
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `design-${name}.png`) });

/** Every visible, enabled control whose box is smaller than 44×44 CSS px. */
function smallTargets(page: Page) {
  return page.evaluate(() => {
    const small: string[] = [];
    for (const e of document.querySelectorAll<HTMLElement>('button, a[href], input:not([type=hidden]), select, textarea, summary, [role=button]')) {
      const r = e.getBoundingClientRect();
      if (!r.width || !r.height || getComputedStyle(e).visibility === 'hidden') continue;
      // A checkbox's target is its label row.
      const box = e instanceof HTMLInputElement && e.type === 'checkbox' ? e.closest('label')!.getBoundingClientRect() : r;
      // Links inside running text are exempt (WCAG 2.5.8 "inline").
      if (e.tagName === 'A' && e.closest('.reply')) continue;
      if (box.width < 44 - 0.5 || box.height < 44 - 0.5) small.push(`${e.tagName.toLowerCase()}#${e.id}.${e.className} ${Math.round(box.width)}×${Math.round(box.height)} "${(e.getAttribute('aria-label') ?? e.textContent ?? '').trim().slice(0, 30)}"`);
    }
    return small;
  });
}

/** Nothing sticks out sideways: the page never scrolls horizontally. */
function overflowX(page: Page) {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

describe('the chat screen', () => {
  it('a new chat shows the desktop, the model that will answer and suggestions; a suggestion fills the composer', async () => {
    const page = await openChat();
    await expect.poll(() => page.locator('#empty-model').textContent()).toBe('qwen3 will answer');
    expect(await page.locator('#empty').isVisible()).toBe(true);
    expect(await page.locator('#empty-host').textContent()).toBe((await page.locator('#info-host').textContent()) || 'x');
    expect(await page.locator('#chat-heading').textContent()).toBe('New chat');
    expect(await page.locator('.suggestion').count()).toBe(3);
    await shot(page, 'empty');
    await page.locator('.suggestion').first().click();
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('Explain a tricky idea in simple words');
    // Nothing is sent by a suggestion alone.
    expect(await page.locator('.msg').count()).toBe(0);
  });

  it('the header: the chat title after the first message, the dot green; the reply without speaker labels, with the model under it', async () => {
    suite.desk.ollama.set({ mode: 'thinking', thinking: ['Let me think'], reply: ['**Hello** there'], chunkDelayMs: 60 });
    const page = await openChat();
    await send(page, 'Say hello to me please');
    await replyFinished(page);
    expect(await page.locator('#chat-heading').textContent()).toBe('Say hello to me please');
    expect(await page.locator('#empty').isHidden()).toBe(true);
    expect(await page.locator('.who').count()).toBe(0);
    const reply = page.locator('.msg.assistant').last();
    expect(await reply.locator('.answered-by').textContent()).toBe('qwen3');
    expect(await reply.locator('details.thinking summary').textContent()).toMatch(/^Thought for \d+ s$/);
    expect(await reply.locator('.reply strong').textContent()).toBe('Hello');
    expect(await page.getByRole('button', { name: 'Copy reply' }).isVisible()).toBe(true);
    await shot(page, 'conversation');
  });

  it('with the desktop on "auto", the empty chat and the reply name the model auto stands for (the first the provider lists), never "auto"', async () => {
    const { relay, ollama } = suite.desk;
    relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'auto' });
    try {
      ollama.set({ mode: 'normal', reply: ['Hi there'] });
      const page = await openChat();
      await expect.poll(() => page.locator('#empty-model').textContent()).toBe('qwen3:latest will answer');
      await send(page, 'Hello');
      await replyFinished(page);
      expect(await page.locator('.msg.assistant').last().locator('.answered-by').textContent()).toBe('qwen3:latest');
    } finally {
      relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'qwen3' });
    }
  });

  it('a bold span still streaming shows no raw ** ; the send arrow becomes a stop square while streaming', async () => {
    suite.desk.ollama.set({ mode: 'normal', reply: ['Plain and **bold', ' words', ' here', ' that', ' keep', ' coming', '** done.'], chunkDelayMs: 250 });
    const page = await openChat();
    await send(page, 'Bold please');
    await expect.poll(() => page.locator('.msg.assistant .reply').last().textContent()).toContain('bold');
    expect(await page.locator('.msg.assistant .reply').last().textContent()).not.toContain('**');
    expect(await page.locator('.msg.assistant .reply strong').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Send' }).isVisible()).toBe(false);
    await shot(page, 'streaming');
    await replyFinished(page, 15_000);
    expect(await page.getByRole('button', { name: 'Send' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(false);
  });

  it('the composer grows with its text up to a limit, without a resize handle', async () => {
    const page = await openChat();
    const box = page.getByLabel('Message', { exact: true });
    const h0 = (await box.boundingBox())!.height;
    expect(await box.evaluate((e) => getComputedStyle(e).resize)).toBe('none');
    await box.fill('one\ntwo\nthree');
    const h3 = (await box.boundingBox())!.height;
    expect(h3).toBeGreaterThan(h0 + 30);
    await box.fill(Array.from({ length: 60 }, (_, i) => `line ${i}`).join('\n'));
    const hMax = (await box.boundingBox())!.height;
    expect(hMax).toBeGreaterThan(h3);
    expect(hMax).toBeLessThanOrEqual(812 * 0.4 + 1);
    expect(await box.evaluate((e) => getComputedStyle(e).overflowY)).toBe('auto');
    await shot(page, 'composer-grown');
    await box.fill('');
    expect((await box.boundingBox())!.height).toBeLessThan(h0 + 2);
  });

  it('a wide table scrolls sideways without breaking words; code scrolls; a long URL wraps; nothing is wider than 320 px', async () => {
    const row = '| Provider | Endpoint | Streaming | Images | Comments |\n|---|---|---|---|---|\n| Ollama | /api/chat | NDJSON | base64 | Extraordinarily comprehensive |\n';
    suite.desk.ollama.set({ mode: 'normal', reply: [row, '\n```js\nconst aVeryLongIdentifierName = someFunctionCall(withArguments, andMoreArguments, andEvenMore);\n```\n', '\nSee https://example.com/a/very/long/path/that/goes/on/and/on/without/any/spaces/at/all/whatsoever/index.html for more.'] });
    const page = await openChat('light', 320);
    await send(page, 'A table');
    await replyFinished(page);
    const table = page.locator('.msg.assistant .reply table');
    const t = await table.evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth, overflow: getComputedStyle(e).overflowX }));
    expect(t.overflow).toBe('auto');
    expect(t.scroll).toBeGreaterThan(t.client);
    // No word of a cell is broken across lines: each cell word sits on one line.
    const broken = await table.evaluate((e) =>
      [...e.querySelectorAll('td, th')].filter((c) => {
        const range = document.createRange();
        range.selectNodeContents(c);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        return !(c.textContent ?? '').includes(' ') && lines.size > 1;
      }).length,
    );
    expect(broken).toBe(0);
    const pre = await page.locator('.msg.assistant .reply pre').evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }));
    expect(pre.scroll).toBeGreaterThan(pre.client);
    expect(await overflowX(page)).toBe(0);
    await shot(page, 'table-320');
  });
});

describe('at 320 px', () => {
  it('nothing is wider than the screen and the header stays on one line: empty chat, settings, chats', async () => {
    const page = await openChat('light', 320);
    const oneLine = () => page.locator('#chat-heading').evaluate((e) => e.getBoundingClientRect().height <= parseFloat(getComputedStyle(e).lineHeight) * 1.5);
    expect(await overflowX(page)).toBe(0);
    expect(await oneLine()).toBe(true);
    await page.getByRole('button', { name: 'Settings' }).click();
    expect(await overflowX(page)).toBe(0);
    const sheet = await page.locator('#settings-sheet').evaluate((e) => e.scrollWidth - e.clientWidth);
    expect(sheet).toBe(0);
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Chats', exact: true }).click();
    expect(await overflowX(page)).toBe(0);
    await shot(page, 'drawer-320');
  });
});

describe('the layers', () => {
  it('settings live in a sheet: desktop, Test connection, phone choices (the system prompt is the chat\'s own); Unpair asks first', async () => {
    const page = await openChat();
    expect(await page.getByRole('button', { name: 'Test connection' }).isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Settings' }).click();
    expect(await page.locator('#settings-sheet').isVisible()).toBe(true);
    expect(await page.locator('#info-version').textContent()).toBe('9.8.7');
    for (const name of ['Test connection', 'Forget this desktop', 'Unpair']) expect(await page.getByRole('button', { name, exact: true }).first().isVisible()).toBe(true);
    expect(await page.getByLabel('System prompt for this chat').isVisible()).toBe(false);
    expect(await page.getByLabel('Keep chats on this phone').isVisible()).toBe(true);
    await shot(page, 'settings');
    await page.locator('#unpair').click();
    expect(await page.locator('#unpair-confirm').isVisible()).toBe(true);
    await shot(page, 'settings-unpair');
    await page.locator('#unpair-cancel').click();
    await page.keyboard.press('Escape');
    expect(await page.locator('#settings-sheet').isHidden()).toBe(true);
    expect(await page.locator('#chat').isVisible()).toBe(true);
    // Confirmed: the pairing goes.
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.locator('#unpair').click();
    await page.locator('#unpair-yes').click();
    await page.locator('#pair').waitFor();
    await shot(page, 'pair');
  });

  it('the chats drawer: full titles, delete with Undo, deleting the open chat opens a new one', async () => {
    suite.desk.ollama.set({ mode: 'normal', reply: ['Fine.'] });
    const page = await openChat();
    const long = 'A rather long question about the weather in Lisbon';
    await send(page, long);
    await replyFinished(page);
    await page.getByRole('button', { name: 'New chat' }).click();
    await send(page, 'Second one');
    await replyFinished(page);
    await page.getByRole('button', { name: 'Chats', exact: true }).click();
    expect(await page.locator('#history').isVisible()).toBe(true);
    await expect.poll(() => page.locator('#chat-list .chat-title').allTextContents()).toEqual(['Second one', long]);
    // The whole title shows: it wraps onto a second line rather than ending in an ellipsis.
    const title = await page.locator('#chat-list .chat-title').last().evaluate((e) => ({ clipped: e.scrollWidth > e.clientWidth || getComputedStyle(e).textOverflow === 'ellipsis', lines: Math.round(e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight)) }));
    expect(title.clipped).toBe(false);
    expect(title.lines).toBeGreaterThanOrEqual(2);
    await shot(page, 'drawer');
    // Delete the open chat: a new one opens, and Undo brings the deleted one back.
    await page.getByRole('button', { name: 'More for “Second one”' }).click();
    await page.getByRole('menuitem', { name: 'Delete “Second one”' }).click();
    await expect.poll(() => page.locator('#chat-list .chat-title').allTextContents()).toEqual([long]);
    expect(await page.locator('#chat-heading').textContent()).toBe('New chat');
    expect(await page.locator('#toast').isVisible()).toBe(true);
    await shot(page, 'drawer-undo');
    await page.getByRole('button', { name: 'Undo' }).click();
    await expect.poll(() => page.locator('#chat-list .chat-title').allTextContents()).toEqual(['Second one', long]);
    await page.keyboard.press('Escape');
    expect(await page.locator('#history').isHidden()).toBe(true);
  });
});

describe('accessibility', () => {
  for (const scheme of ['light', 'dark'] as const) {
    it(`the pairing screen: 44 px targets and no serious axe-core violation (${scheme})`, async () => {
      const { page } = await suite.openPhone(scheme);
      await page.goto(`${suite.desk.relay.url}/`);
      await page.locator('#pair').waitFor();
      expect(await smallTargets(page)).toEqual([]);
      expect(await axe(page)).toEqual([]);
      expect(await overflowX(page)).toBe(0);
    });

    it(`every visible control is at least 44 px, and axe-core finds no serious or critical violation (${scheme})`, async () => {
      suite.desk.ollama.set({ mode: 'thinking', thinking: ['Hmm'], reply: ['Here is `code` and a [link](https://example.com).\n\n```js\nlet x = 1;\n```'] });
      const page = await openChat(scheme);
      expect(await smallTargets(page)).toEqual([]);
      expect(await axe(page)).toEqual([]);
      await send(page, 'Check me');
      await replyFinished(page);
      await page.locator('.code-bar button').first().waitFor();
      expect(await smallTargets(page)).toEqual([]);
      expect(await axe(page)).toEqual([]);
      await shot(page, `conversation-${scheme}`);
      await page.getByRole('button', { name: 'Settings' }).click();
      expect(await smallTargets(page)).toEqual([]);
      expect(await axe(page)).toEqual([]);
      await page.keyboard.press('Escape');
      await page.getByRole('button', { name: 'Chats', exact: true }).click();
      expect(await smallTargets(page)).toEqual([]);
      expect(await axe(page)).toEqual([]);
      await page.keyboard.press('Escape');
      // Focus is visible: a focused control draws an outline.
      await page.keyboard.press('Tab');
      const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
      expect(outline).not.toBe('none');
    });
  }
});
