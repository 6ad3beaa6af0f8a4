/**
 * The web client with conversations kept on the desktop (issue 30), in Chromium: two origins of
 * one relay (127.0.0.1 and localhost, as two tunnel addresses of one desktop would be) are two
 * separate browser storages; a chat made on one is listed and opened on the other, a rename and
 * a delete on one reach the other's open drawer through the change feed, and with the setting
 * off nothing is sent to /v1/conversations beyond the one check.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import type { OllamaStandIn } from '../fixtures/providers/ollama';
import { bearer, send as http } from '../helpers/http';
import type { TestRelay } from '../helpers/relay';
import { countRequests, lastReply, launchBrowser, LOAD_FAILED_ONCE, phone, replyFinished, send, startDesk, type Desk } from './harness';

let browser: Browser;
let ollama: OllamaStandIn;
let relay: TestRelay;
let keep = true;
const closers: (() => Promise<unknown>)[] = [];

let desk: Desk | undefined;

beforeAll(async () => {
  browser = await launchBrowser();
  desk = await startDesk({ mode: 'normal' }, { keepConversations: () => keep });
  ({ relay, ollama } = desk);
}, 60_000);
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
  keep = true;
});
afterAll(async () => {
  await browser?.close();
  await desk?.close();
});

/** A phone-sized browser context of its own, closed after the test. */
async function newPhone(): Promise<Awaited<ReturnType<typeof phone>>> {
  const p = await phone(browser);
  closers.push(() => p.context.close());
  return p;
}

async function openAt(base: string): Promise<Page> {
  const p = await newPhone();
  await p.page.goto(webClientLink(base, relay.token));
  await p.page.locator('#chat').waitFor();
  return p.page;
}

const localhostUrl = () => relay.url.replace('127.0.0.1', 'localhost');
const titles = (page: Page) => page.locator('#chat-list .chat-title').allTextContents();

async function openList(page: Page): Promise<void> {
  if (await page.locator('#history').isHidden()) await page.getByRole('button', { name: 'Chats', exact: true }).click();
  await page.locator('#history').waitFor();
}

describe('chats kept on the desktop, in the web client', () => {
  it('shows a chat made at one address at another address, with its messages, and keeps rename and delete in step', async () => {
    const a = await openAt(relay.url);
    ollama.set({ mode: 'normal', reply: ['Paris.'] });
    await send(a, 'What is the capital of France?');
    await replyFinished(a);
    expect((await lastReply(a).textContent())?.trim()).toBe('Paris.');

    // Kept on the desktop, with the reply.
    await expect
      .poll(async () => (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations.map((c: any) => c.preview))
      .toEqual(['Paris.']);
    const id = (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations[0].id;
    expect((await http(relay.url, `/v1/conversations/${id}`, { headers: bearer(relay.token) })).json.messages).toEqual([
      { role: 'user', content: 'What is the capital of France?' },
      { role: 'assistant', content: 'Paris.' },
    ]);

    // Another origin: its own (empty) IndexedDB, the same chats.
    const b = await openAt(localhostUrl());
    expect(new URL(b.url()).origin).not.toBe(new URL(a.url()).origin);
    await openList(b);
    await expect.poll(() => titles(b)).toEqual(['What is the capital of France?']);
    await expect(b.locator('#history-kept').isVisible()).resolves.toBe(true);
    await b.locator('#chat-list .chat-open').first().click();
    await expect.poll(async () => (await b.locator('.msg.assistant .reply').allTextContents()).map((t) => t.trim())).toEqual(['Paris.']);

    // B goes on with the chat; A's open drawer sees the change through the feed.
    ollama.set({ mode: 'normal', reply: ['About 2 million.'] });
    await send(b, 'How many people live there?');
    await replyFinished(b);
    expect(ollama.requests.at(-1)!.body.messages.map((m: any) => m.content)).toEqual(['What is the capital of France?', 'Paris.', 'How many people live there?']);
    await expect
      .poll(async () => (await http(relay.url, `/v1/conversations/${id}`, { headers: bearer(relay.token) })).json.messages.length)
      .toBe(4);

    await openList(a);
    await http(relay.url, `/v1/conversations/${id}`, {
      method: 'PUT',
      headers: { ...bearer(relay.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: 'Paris facts' }),
    });
    // Through each page's change feed (a 150 ms burst window, then the list read): as long as the machine takes.
    await expect.poll(() => titles(a), { timeout: 10_000 }).toEqual(['Paris facts']);
    await expect.poll(() => titles(b), { timeout: 10_000 }).toEqual(['Paris facts']);

    // Delete on B: gone on the desktop and from A's drawer, without reopening it.
    await openList(b);
    await b.getByRole('button', { name: 'More for “Paris facts”' }).click();
    await b.getByRole('menuitem', { name: 'Delete “Paris facts”' }).click();
    await expect.poll(() => titles(a), { timeout: 10_000 }).toEqual([]);
    expect((await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations).toEqual([]);
  });

  it('a rename being typed survives the list being drawn again by another phone\'s change, and is saved as typed', async () => {
    const json = { ...bearer(relay.token), 'Content-Type': 'application/json' };
    const make = async (title: string) => {
      const id = (await http(relay.url, '/v1/conversations', { method: 'POST', headers: json, body: JSON.stringify({ title }) })).json.id as string;
      const messages = [{ role: 'user', content: `About ${title}` }, { role: 'assistant', content: 'Sure.' }];
      await http(relay.url, `/v1/conversations/${id}`, { method: 'PUT', headers: json, body: JSON.stringify({ messages }) });
      return id;
    };
    await make('Groceries');
    const other = await make('Trip');
    const a = await openAt(relay.url);
    await openList(a);
    await expect.poll(() => titles(a)).toEqual(['Trip', 'Groceries']);

    await a.getByRole('button', { name: 'More for “Groceries”' }).click();
    await a.getByRole('menuitem', { name: 'Rename “Groceries”' }).click();
    const input = a.locator('#chat-list .chat-title-input');
    await input.fill('Groceries for Sat');
    // Another phone renames the other chat: this drawer hears it through the feed and redraws.
    await http(relay.url, `/v1/conversations/${other}`, { method: 'PUT', headers: json, body: JSON.stringify({ title: 'Trip to Lyon' }) });
    await expect.poll(() => titles(a), { timeout: 10_000 }).toEqual(['Trip to Lyon']);

    // The half-typed title is still there, with the caret where it was: typing goes on.
    await expect(input.inputValue()).resolves.toBe('Groceries for Sat');
    await a.keyboard.type('urday');
    await a.keyboard.press('Enter');

    // Saved as typed, and now the newest.
    await expect.poll(() => titles(a), { timeout: 10_000 }).toEqual(['Groceries for Saturday', 'Trip to Lyon']);
    await expect
      .poll(async () => (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations.map((c: any) => c.title).sort())
      .toEqual(['Groceries for Saturday', 'Trip to Lyon']);
    // The tests after this one start from an empty desktop.
    for (const c of (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations) {
      await http(relay.url, `/v1/conversations/${c.id}`, { method: 'DELETE', headers: bearer(relay.token) });
    }
  });

  it('runs the reply on the desktop: another phone opening the chat mid-reply watches it live, and the provider is asked once', async () => {
    const words = Array.from({ length: 16 }, (_, i) => `w${i} `);
    // The reply stops after 5 words until B has seen them: mid-reply lasts as long as B takes to
    // open, where a delay between words only made it likely (B opened a finished chat under load).
    ollama.set({ mode: 'normal', reply: words, chunkDelayMs: 20, holdAfter: 5 });
    const asked = ollama.requests.length;
    const a = await openAt(relay.url);
    await send(a, 'Count slowly');
    await expect.poll(async () => (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations.length).toBe(1);
    const id = (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations[0].id;
    // A's turn went to the desktop's conversation, not to the chat stream.
    await expect.poll(() => relay.logLines.some((l) => l.startsWith(`request POST /v1/conversations/${id}/reply 202`))).toBe(true);
    expect(relay.logLines.some((l) => l.startsWith('request POST /v1/chat/stream'))).toBe(false);

    const b = await openAt(localhostUrl());
    await openList(b);
    await expect.poll(() => titles(b)).toEqual(['Count slowly']);
    await b.locator('#chat-list .chat-open').first().click();
    // Mid-reply on B: the part written so far, shown as still being written.
    await expect.poll(async () => (await b.locator('.msg.assistant .reply').allTextContents()).map((t) => t.trim()), { timeout: 10_000 }).toEqual([words.slice(0, 5).join('').trim()]);
    expect(await b.locator('.msg.assistant .reply').last().getAttribute('aria-busy')).toBe('true');
    ollama.release();
    await replyFinished(b, 15_000);
    await replyFinished(a, 15_000);
    expect((await lastReply(b).textContent())?.trim()).toBe(words.join('').trim());
    expect((await lastReply(a).textContent())?.trim()).toBe(words.join('').trim());
    expect(ollama.requests.length).toBe(asked + 1);
    await expect
      .poll(async () => (await http(relay.url, `/v1/conversations/${id}`, { headers: bearer(relay.token) })).json.messages.map((m: any) => m.content))
      .toEqual(['Count slowly', words.join('')]);
    await http(relay.url, `/v1/conversations/${id}`, { method: 'DELETE', headers: bearer(relay.token) });
  });

  it('opens a chat as the desktop has it now: a reply that ended after this phone read its list is shown, before the change feed says so', async () => {
    ollama.set({ mode: 'normal', reply: ['Fine,', ' thanks.'], holdAfter: 1 });
    const a = await openAt(relay.url);
    await send(a, 'How are you?');
    // B's change feed is behind (reconnecting on a slow network): it tells B nothing.
    const p = await newPhone();
    await p.context.addInitScript(`
      const realFetch = window.fetch;
      window.fetch = function (input, init) {
        const url = String(typeof input === 'string' ? input : input.url);
        return url.endsWith('/v1/conversations/events') ? new Promise(() => {}) : realFetch.call(this, input, init);
      };`);
    await p.page.goto(webClientLink(localhostUrl(), relay.token));
    await p.page.locator('#chat').waitFor();
    const b = p.page;
    // B reads the list while the desktop is still replying ...
    await openList(b);
    await expect.poll(() => titles(b), { timeout: 10_000 }).toEqual(['How are you?']);
    // ... and the reply ends before B taps the chat.
    ollama.release();
    await replyFinished(a);
    const id = (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations[0].id;
    await expect.poll(async () => (await http(relay.url, `/v1/conversations/${id}`, { headers: bearer(relay.token) })).json.status).toBe('idle');
    await b.locator('#chat-list .chat-open').first().click();
    const shown = async () => (await b.locator('#log > li').evaluateAll((lis) => lis.map((li) => `${li.classList.contains('user') ? 'user' : 'assistant'}: ${(li.querySelector('.reply') ?? li.querySelector('.text') ?? li).textContent?.trim()}`)));
    await expect.poll(shown, { timeout: 10_000 }).toEqual(['user: How are you?', 'assistant: Fine, thanks.']);
    expect(await b.locator('.msg.assistant .reply').last().getAttribute('aria-busy')).toBe('false');
    await http(relay.url, `/v1/conversations/${id}`, { method: 'DELETE', headers: bearer(relay.token) });
  });

  it('a message sent as soon as the chat shows goes to the desktop\'s conversation, however late the desktop says it keeps chats', async () => {
    ollama.set({ mode: 'normal', reply: ['At once.'] });
    const p = await newPhone();
    // The answer to "does the desktop keep chats?" comes late (a slow tunnel).
    await p.context.addInitScript(`
      const realFetch = window.fetch;
      window.fetch = async function (input, init) {
        const url = String(typeof input === 'string' ? input : input.url);
        if (url.endsWith('/v1/conversations') && !(init && init.method)) await new Promise((r) => setTimeout(r, 1500));
        return realFetch.call(this, input, init);
      };`);
    const streams = countRequests(relay, 'POST', '/v1/chat/stream');
    await p.page.goto(webClientLink(relay.url, relay.token));
    await p.page.locator('#chat').waitFor();
    await send(p.page, 'Quick one');
    await replyFinished(p.page);
    expect((await lastReply(p.page).textContent())?.trim()).toBe('At once.');
    const id = (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations[0]?.id;
    expect(id).toBeTruthy();
    expect(countRequests(relay, 'POST', `/v1/conversations/${id}/reply`)).toBe(1);
    expect(countRequests(relay, 'POST', '/v1/chat/stream')).toBe(streams);
    await http(relay.url, `/v1/conversations/${id}`, { method: 'DELETE', headers: bearer(relay.token) });
  });

  it('a phone does not write a chat back after a reply the desktop ran: its late copy cannot undo another phone\'s next turn', async () => {
    ollama.set({ mode: 'normal', reply: ['First answer.'] });
    const p = await newPhone();
    // A's writes of the chat that carry a reply are held until the test lets them go (a slow network).
    await p.context.addInitScript(`
      window.__held = 0;
      window.__landed = 0;
      let release;
      const released = new Promise((r) => (release = r));
      window.__release = () => release();
      const realFetch = window.fetch;
      window.fetch = async function (input, init) {
        const carriesReply = init && init.method === 'PUT' && String(init.body || '').includes('"assistant"');
        if (!carriesReply) return realFetch.call(this, input, init);
        window.__held += 1;
        await released;
        try {
          return await realFetch.call(this, input, init);
        } finally {
          window.__landed += 1;
        }
      };`);
    await p.page.goto(webClientLink(relay.url, relay.token));
    await p.page.locator('#chat').waitFor();
    const a = p.page;
    await send(a, 'First question');
    await replyFinished(a);
    const id = (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations[0].id;
    const contents = async () => (await http(relay.url, `/v1/conversations/${id}`, { headers: bearer(relay.token) })).json.messages.map((m: any) => m.content);
    await expect.poll(contents).toEqual(['First question', 'First answer.']);

    // B goes on with the chat, to the end of its reply.
    ollama.set({ mode: 'normal', reply: ['Second answer.'] });
    const b = await openAt(localhostUrl());
    await openList(b);
    await expect.poll(() => titles(b), { timeout: 10_000 }).toEqual(['First question']);
    await b.locator('#chat-list .chat-open').first().click();
    await expect.poll(async () => (await b.locator('.msg.assistant .reply').allTextContents()).map((t) => t.trim()), { timeout: 10_000 }).toEqual(['First answer.']);
    await send(b, 'Second question');
    await replyFinished(b);
    await expect.poll(contents).toEqual(['First question', 'First answer.', 'Second question', 'Second answer.']);

    // Whatever A held goes now, and lands.
    await a.evaluate(() => (window as any).__release());
    await expect.poll(() => a.evaluate(() => (window as any).__landed === (window as any).__held)).toBe(true);
    expect(await contents()).toEqual(['First question', 'First answer.', 'Second question', 'Second answer.']);
    await http(relay.url, `/v1/conversations/${id}`, { method: 'DELETE', headers: bearer(relay.token) });
  });

  it('resumes a desktop-run reply after the connection is cut, from the last event, without asking the provider again', async () => {
    const words = Array.from({ length: 12 }, (_, i) => `r${i} `);
    ollama.set({ mode: 'normal', reply: words, chunkDelayMs: 80 });
    const asked = ollama.requests.length;
    const p = await newPhone();
    // The conversation's event stream fails after 3 reads, once, as WebKit words a dropped connection.
    await p.context.addInitScript(LOAD_FAILED_ONCE.replace(".endsWith('/v1/chat/stream')", ".match(/\\/v1\\/conversations\\/[0-9a-f-]{36}\\/events$/)"));
    await p.page.goto(webClientLink(relay.url, relay.token));
    await p.page.locator('#chat').waitFor();
    await send(p.page, 'Count again');
    await replyFinished(p.page, 15_000);
    expect((await lastReply(p.page).textContent())?.trim()).toBe(words.join('').trim());
    expect(await p.page.evaluate(() => (globalThis as any).__loadFailed)).toBe(1);
    const id = (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations[0].id;
    const follows = relay.logLines.filter((l) => l.startsWith(`request POST /v1/conversations/${id}/events`));
    expect(follows.length).toBeGreaterThanOrEqual(2);
    expect(ollama.requests.length).toBe(asked + 1);
    await http(relay.url, `/v1/conversations/${id}`, { method: 'DELETE', headers: bearer(relay.token) });
  });

  it('with the setting off, keeps chats on the phone only and nothing on the desktop', async () => {
    keep = false;
    const before = relay.logLines.length;
    const a = await openAt(relay.url);
    ollama.set({ mode: 'normal', reply: ['Hi.'] });
    await send(a, 'Hello there');
    await replyFinished(a);
    await openList(a);
    await expect.poll(() => titles(a)).toEqual(['Hello there']);
    expect(await a.locator('#history-kept').isVisible()).toBe(false);
    // The first test's change feeds are logged when their pages close, which may be now.
    const calls = relay.logLines.slice(before).filter((l) => l.includes('/v1/conversations') && !l.startsWith('request POST /v1/conversations/events 200'));
    // One check at connect, answered 403; nothing else, and nothing kept.
    expect(calls).toEqual(['request GET /v1/conversations 403 -']);
    expect(readdirSync(join(relay.dir, 'conversations')).filter((n) => !n.startsWith('.'))).toEqual([]);
  });
  it('exports a chat as Markdown through the share sheet: the desktop\'s export when it keeps the chat, else the phone\'s copy as a .md download', async () => {
    // The share sheet, stubbed in the page: what the page hands it is recorded (its files read as text).
    const stubShare = (canShare: boolean) => `
      navigator.canShare = (data) => ${canShare} && !!data && Array.isArray(data.files);
      navigator.share = async (data) => {
        window.__shared = { title: data.title, files: await Promise.all(data.files.map(async (f) => ({ name: f.name, type: f.type, text: await f.text() }))) };
      };`;
    const openWith = async (canShare: boolean) => {
      const p = await newPhone();
      await p.page.addInitScript(stubShare(canShare));
      await p.page.goto(webClientLink(relay.url, relay.token));
      await p.page.locator('#chat').waitFor();
      return p.page;
    };

    // Kept on the desktop: the desktop's own export, shared as a text/markdown file.
    const a = await openWith(true);
    ollama.set({ mode: 'normal', reply: ['**Paris**', ', on the Seine.'] });
    await send(a, 'Capital of France?');
    await replyFinished(a);
    const idOf = async () => (await http(relay.url, '/v1/conversations', { headers: bearer(relay.token) })).json.conversations.find((c: any) => c.preview.startsWith('**Paris**'))?.id as string | undefined;
    await expect.poll(idOf).toBeTruthy();
    const id = (await idOf())!;
    const desktops = await http(relay.url, `/v1/conversations/${id}/export`, { headers: bearer(relay.token) });
    await openList(a);
    await a.getByRole('button', { name: 'More for “Capital of France?”' }).click();
    await a.getByRole('menuitem', { name: 'Export “Capital of France?” as Markdown' }).click();
    const shared = await a.waitForFunction(() => (window as any).__shared).then((h) => h.jsonValue());
    expect(shared.title).toBe('Capital of France?');
    expect(shared.files).toHaveLength(1);
    expect(shared.files[0].name).toBe('Capital-of-France.md');
    expect(shared.files[0].type).toBe('text/markdown');
    expect(shared.files[0].text).toBe(desktops.body);
    expect(shared.files[0].text).toMatch(/^# Capital of France\?\n/);
    expect(shared.files[0].text).toContain('## You\n\nCapital of France?\n\n## Assistant\n\n**Paris**, on the Seine.\n');
    expect(countRequests(relay, 'GET', `/v1/conversations/${id}/export`)).toBe(2);

    // Not kept on the desktop, and a browser that cannot share files: this phone's copy, written
    // the same way, downloaded as a .md; the desktop is not asked.
    keep = false;
    const b = await openWith(false);
    ollama.set({ mode: 'normal', reply: ['Rome.'] });
    await send(b, 'Capital of Italy?');
    await replyFinished(b);
    await openList(b);
    const exportsBefore = relay.logLines.filter((l) => l.includes('/export')).length;
    await b.getByRole('button', { name: 'More for “Capital of Italy?”' }).click();
    const [download] = await Promise.all([b.waitForEvent('download'), b.getByRole('menuitem', { name: 'Export “Capital of Italy?” as Markdown' }).click()]);
    expect(download.suggestedFilename()).toBe('Capital-of-Italy.md');
    const text = readFileSync((await download.path())!, 'utf8');
    expect(text).toMatch(/^# Capital of Italy\?\n\n_Exported from DeskRelay, last updated \d{4}-\d\d-\d\dT[\d:.]+Z\._\n\n## You\n\nCapital of Italy\?\n\n## Assistant\n\nRome\.\n$/);
    expect(await b.evaluate(() => (window as any).__shared)).toBeUndefined();
    expect(relay.logLines.filter((l) => l.includes('/export')).length).toBe(exportsBefore);
  });
});
