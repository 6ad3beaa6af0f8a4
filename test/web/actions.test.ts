/**
 * What people expect of a chat app (issue 12, step 4): copy a message and each code block, code
 * highlighted by highlight.js loaded only once a code block appears, regenerate the last reply,
 * edit a sent message and resend from there, a per-chat system prompt sent first, scroll that
 * follows the reply unless the reader scrolled up, and Enter: send on a desktop, newline on a phone.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { lastReply, phone, replyFinished, SCREENSHOTS, send, usePhoneSuite } from './harness';

const suite = usePhoneSuite({ mode: 'normal' });
const { desk, cleanups } = suite;

type Sent = { role: string; content: string }[];
const lastSent = (): Sent => (desk.ollama.requests.filter((r) => r.path === '/api/chat').at(-1)!.body as { messages: Sent }).messages;
const chatCalls = () => desk.ollama.requests.filter((r) => r.path === '/api/chat').length;

async function openChat(colorScheme: 'light' | 'dark' = 'light'): Promise<{ page: Page; requests: string[] }> {
  const { context, page, console } = await phone(suite.browser, colorScheme);
  cleanups.push(async () => {
    await context.close();
    expect(console.filter((l) => l.startsWith('pageerror'))).toEqual([]);
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: desk.relay.url });
  const requests: string[] = [];
  page.on('request', (r) => requests.push(new URL(r.url()).pathname));
  await page.goto(webClientLink(desk.relay.url, desk.relay.token));
  await page.locator('#chat').waitFor();
  return { page, requests };
}

async function turn(page: Page, text: string, reply: string[]): Promise<void> {
  desk.ollama.set({ mode: 'normal', reply });
  const before = await page.locator('.msg.assistant').count();
  await send(page, text);
  await expect.poll(() => page.locator('.msg.assistant').count()).toBe(before + 1);
  await replyFinished(page);
}

const clipboard = (page: Page) => page.evaluate(() => (globalThis as any).navigator.clipboard.readText() as Promise<string>);

describe('chat actions', () => {
  it('copies a message, a reply and each code block; highlight.js loads only once a code block appears', async () => {
    const { page, requests } = await openChat();
    await turn(page, 'Say hello', ['Hello **there**.']);
    expect(requests).not.toContain('/vendor/highlight.js');
    await page.getByRole('button', { name: 'Copy message' }).click();
    await expect.poll(() => clipboard(page)).toBe('Say hello');
    await page.getByRole('button', { name: 'Copy reply' }).last().click();
    await expect.poll(() => clipboard(page)).toBe('Hello **there**.');

    await turn(page, 'Two snippets please', ['Here:\n\n```js\nconst answer = 42;\nconsole.log(answer);\n```\n\nand\n\n```python\ndef f(x):\n    return x * 2\n```\n']);
    const reply = lastReply(page);
    expect(await reply.getByRole('button', { name: 'Copy code' }).count()).toBe(2);
    await reply.getByRole('button', { name: 'Copy code' }).nth(1).click();
    await expect.poll(() => clipboard(page)).toBe('def f(x):\n    return x * 2\n');
    await reply.getByRole('button', { name: 'Copy code' }).first().click();
    await expect.poll(() => clipboard(page)).toBe('const answer = 42;\nconsole.log(answer);\n');
    // Highlighted by highlight.js, fetched now and only now.
    await expect.poll(() => reply.locator('code.language-js .hljs-keyword').count()).toBeGreaterThan(0);
    expect(await reply.locator('code.language-python .hljs-keyword').count()).toBeGreaterThan(0);
    expect(requests.filter((p) => p === '/vendor/highlight.js')).toHaveLength(1);
    await page.screenshot({ path: join(SCREENSHOTS, 'code-light.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: join(SCREENSHOTS, 'code-dark.png'), fullPage: true });
  });

  it('regenerates the last reply with the same history', async () => {
    const { page } = await openChat();
    await turn(page, 'Pick a number', ['Seven.']);
    const calls = chatCalls();
    desk.ollama.set({ mode: 'normal', reply: ['Three.'] });
    await page.getByRole('button', { name: 'Regenerate reply' }).click();
    await expect.poll(() => lastReply(page).textContent()).toContain('Three.');
    await replyFinished(page);
    expect(chatCalls()).toBe(calls + 1);
    expect(lastSent()).toEqual([{ role: 'user', content: 'Pick a number' }]);
    expect(await page.locator('.msg.assistant').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Regenerate reply' }).count()).toBe(1);
    // The regenerated reply is the history from now on (and what the phone keeps).
    await turn(page, 'Why?', ['Because.']);
    expect(lastSent().map((m) => m.content)).toEqual(['Pick a number', 'Three.', 'Why?']);
    await page.reload();
    await expect.poll(() => page.locator('.msg.assistant').first().locator('.reply').textContent()).toContain('Three.');
  });

  it('edits a sent message and resends from there: the provider receives the edited history', async () => {
    const { page } = await openChat();
    await turn(page, 'What is 2+2?', ['Four.']);
    await turn(page, 'And 3+3?', ['Six.']);
    await turn(page, 'And 4+4?', ['Eight.']);
    // Edit the second question: what followed it goes, the edited text is sent.
    await page.getByRole('button', { name: 'Edit message' }).nth(1).click();
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('And 3+3?');
    expect(await page.locator('#editing').isVisible()).toBe(true);
    await page.screenshot({ path: join(SCREENSHOTS, 'editing.png') });
    await page.getByLabel('Message', { exact: true }).fill('And 5+5?');
    desk.ollama.set({ mode: 'normal', reply: ['Ten.'] });
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => lastReply(page).textContent()).toContain('Ten.');
    await replyFinished(page);
    expect(lastSent()).toEqual([
      { role: 'user', content: 'What is 2+2?' },
      { role: 'assistant', content: 'Four.' },
      { role: 'user', content: 'And 5+5?' },
    ]);
    expect(await page.locator('.msg.user').allTextContents()).toEqual([expect.stringContaining('What is 2+2?'), expect.stringContaining('And 5+5?')]);
    expect(await page.locator('#editing').isHidden()).toBe(true);
    // Cancel leaves the chat as it is.
    await page.getByRole('button', { name: 'Edit message' }).first().click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('');
    expect(await page.locator('ol.log > li').count()).toBe(4);
  });

  it('a per-chat system prompt reaches the provider as the first message, and stays with its chat', async () => {
    const { page } = await openChat('dark');
    // The chat's own instructions: from the new chat's screen (issue 38: no longer in Settings).
    await page.getByRole('button', { name: 'Give this chat instructions (system prompt)' }).click();
    await page.getByLabel('System prompt for this chat').fill('You are a pirate. Answer in one line.');
    await page.getByRole('button', { name: 'Close instructions' }).click();
    await turn(page, 'Hello', ['Arr.']);
    expect(lastSent()).toEqual([
      { role: 'system', content: 'You are a pirate. Answer in one line.' },
      { role: 'user', content: 'Hello' },
    ]);
    await turn(page, 'Again', ['Arr arr.']);
    expect(lastSent()[0]).toEqual({ role: 'system', content: 'You are a pirate. Answer in one line.' });
    expect(lastSent()).toHaveLength(4);
    await page.screenshot({ path: join(SCREENSHOTS, 'system-prompt-dark.png') });
    // A new chat has its own (empty) prompt; the first chat keeps its own after a reload.
    await page.getByRole('button', { name: 'New chat' }).click();
    expect(await page.getByLabel('System prompt for this chat').inputValue()).toBe('');
    await turn(page, 'Plain', ['ok']);
    expect(lastSent()).toEqual([{ role: 'user', content: 'Plain' }]);
    await page.getByRole('button', { name: 'Chats', exact: true }).click();
    await page.getByRole('button', { name: /^Hello/ }).click();
    expect(await page.getByLabel('System prompt for this chat').inputValue()).toBe('You are a pirate. Answer in one line.');
    // And from the chat's own menu in the list.
    await page.getByRole('button', { name: 'Chats', exact: true }).click();
    await page.getByRole('button', { name: 'More for “Hello”' }).click();
    await page.getByRole('menuitem', { name: 'System prompt of “Hello”' }).click();
    expect(await page.getByLabel('System prompt for this chat').isVisible()).toBe(true);
    expect(await page.getByLabel('System prompt for this chat').inputValue()).toBe('You are a pirate. Answer in one line.');
  });

  it('follows the reply while at the bottom, and not once the reader scrolled up', async () => {
    const { page } = await openChat();
    const long = Array.from({ length: 60 }, (_, i) => `Line ${i} of a long answer.\n\n`);
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 30, reply: long });
    await send(page, 'Something long');
    await expect.poll(() => lastReply(page).textContent(), { timeout: 10_000 }).toContain('Line 30');
    const gap = () => page.evaluate(() => {
      const s = (globalThis as any).document.scrollingElement;
      return s.scrollHeight - s.scrollTop - s.clientHeight;
    });
    expect(await gap()).toBeLessThan(60);
    await replyFinished(page);
    // Scrolled up while a reply streams: the page stays where the reader is.
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 30, reply: long });
    await send(page, 'Again');
    await expect.poll(() => page.locator('.msg.assistant').count(), { timeout: 10_000 }).toBe(2);
    await expect.poll(() => lastReply(page).textContent(), { timeout: 10_000 }).toContain('Line 5');
    await page.mouse.wheel(0, -1500);
    // Where the reader stopped: scrolled up, and still on two reads in a row (the wheel's scroll may animate).
    const scrollTop = () => page.evaluate(() => (globalThis as any).document.scrollingElement.scrollTop as number);
    let seen = -1;
    await expect
      .poll(async () => {
        const [now, before] = [await scrollTop(), seen];
        seen = now;
        return now === before && (await gap()) > 200;
      }, { timeout: 10_000 })
      .toBe(true);
    const top = seen;
    await replyFinished(page);
    expect(await page.evaluate(() => (globalThis as any).document.scrollingElement.scrollTop)).toBe(top);
    expect(await gap()).toBeGreaterThan(200);
  });
});

describe('keyboard', () => {
  it('Enter is a new line on a phone; Ctrl+Enter sends', async () => {
    const { page } = await openChat();
    desk.ollama.set({ mode: 'normal', reply: ['ok'] });
    const calls = chatCalls();
    await page.getByLabel('Message', { exact: true }).fill('line one');
    await page.getByLabel('Message', { exact: true }).press('Enter');
    await page.getByLabel('Message', { exact: true }).pressSequentially('line two');
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('line one\nline two');
    expect(chatCalls()).toBe(calls);
    await page.getByLabel('Message', { exact: true }).press('Control+Enter');
    await replyFinished(page);
    expect(lastSent().at(-1)).toEqual({ role: 'user', content: 'line one\nline two' });
  });

  it('Enter sends on a desktop browser; Shift+Enter is a new line', async () => {
    const context = await suite.browser.newContext({ viewport: { width: 1280, height: 800 } });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(webClientLink(desk.relay.url, desk.relay.token));
    await page.locator('#chat').waitFor();
    desk.ollama.set({ mode: 'normal', reply: ['sent'] });
    await page.getByLabel('Message', { exact: true }).fill('first');
    await page.getByLabel('Message', { exact: true }).press('Shift+Enter');
    await page.getByLabel('Message', { exact: true }).pressSequentially('second');
    await page.getByLabel('Message', { exact: true }).press('Enter');
    await replyFinished(page);
    expect(lastSent().at(-1)).toEqual({ role: 'user', content: 'first\nsecond' });
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('');
  });
});
