/**
 * The phone app's own features in WebKit (WebKitGTK's MiniBrowser over W3C WebDriver, as
 * webkit.test.ts): the service worker serving the shell offline, chats kept in IndexedDB across a
 * reload, delete and delete all, "Keep chats on this phone" off leaving IndexedDB empty, copy
 * buttons, regenerate, edit and resend, and the system prompt sent first.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { SCREENSHOTS, type Desk, phoneSession, useWebKitSuite, typeMessage } from './harness';
import { startProxy, type TestProxy } from './proxy';
import { clickWhenReady, whenInteractable, type Session, type WebKit } from './webdriver';

let webkit: WebKit;
let desk: Desk;
useWebKitSuite({ mode: 'normal' }, (s) => ({ webkit, desk } = s));

type Sent = { role: string; content: string }[];
const lastSent = (): Sent => (desk.ollama.requests.filter((r) => r.path === '/api/chat').at(-1)!.body as { messages: Sent }).messages;

async function withSession(base: string, run: (s: Session) => Promise<void>): Promise<void> {
  const s = await phoneSession(webkit);
  try {
    await s.go(webClientLink(base, desk.relay.token));
    await s.waitFor('#chat');
    await run(s);
  } finally {
    await s.close();
  }
}

const click = clickWhenReady;

async function turn(s: Session, text: string, reply: string): Promise<void> {
  desk.ollama.set({ mode: 'normal', reply: [reply] });
  const before = await s.count('.msg.assistant');
  await typeMessage(s, text);
  await click(s, 'form.compose button[type="submit"]');
  await expect.poll(() => s.count('.msg.assistant .reply[aria-busy="false"]'), { timeout: 10_000 }).toBe(before + 1);
}

/** The chats in IndexedDB, read without creating the database. */
function stored(s: Session): Promise<{ exists: boolean; titles: string[] }> {
  return s.exec(`
    return (async () => {
      const names = (await indexedDB.databases()).map((d) => d.name);
      if (!names.includes('deskrelay')) return { exists: false, titles: [] };
      // Opening a database the page just deleted would create it again: refuse to create it.
      const db = await new Promise((res) => { const r = indexedDB.open('deskrelay'); r.onupgradeneeded = () => r.transaction.abort(); r.onsuccess = () => res(r.result); r.onerror = () => res(undefined); });
      if (!db) return { exists: false, titles: [] };
      try {
        if (!db.objectStoreNames.contains('chats')) return { exists: true, titles: [] };
        const all = await new Promise((res, rej) => { const r = db.transaction('chats').objectStore('chats').getAll(); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
        return { exists: true, titles: all.map((c) => c.title).sort() };
      } finally { db.close(); }
    })();`);
}

const titles = (s: Session) => s.exec<string[]>(`return [...document.querySelectorAll('#chat-list .chat-title')].map((e) => e.textContent);`);

describe('WebKit: the installed app', () => {
  it('registers the service worker and opens offline with the saved chats, saying the desktop is unreachable', async () => {
    const proxy: TestProxy = await startProxy(desk.relay.url);
    let open = true;
    try {
      await withSession(proxy.url, async (s) => {
        await expect.poll(() => s.exec<boolean>('return !!(navigator.serviceWorker && navigator.serviceWorker.controller);'), { timeout: 10_000 }).toBe(true);
        await turn(s, 'Saved in WebKit', 'Kept.');
        await proxy.close();
        open = false;
        await s.refresh();
        await s.waitFor('#chat');
        await expect.poll(() => s.textOf('#conn'), { timeout: 10_000 }).toBe('Desktop unreachable');
        await expect.poll(() => s.textOf('.msg.user .text')).toBe('Saved in WebKit');
        expect(await s.textOf('#info-warning')).toContain('The desktop is unreachable');
        writeFileSync(join(SCREENSHOTS, 'webkit-offline.png'), await s.screenshot());
      });
    } finally {
      if (open) await proxy.close();
    }
  });

  it('keeps chats across a reload; delete and delete all; "Keep chats" off leaves IndexedDB empty', async () => {
    await withSession(desk.relay.url, async (s) => {
      await turn(s, 'first webkit chat', 'one');
      await click(s, '#new-chat');
      await turn(s, 'second webkit chat', 'two');
      expect((await stored(s)).titles).toEqual(['first webkit chat', 'second webkit chat']);
      await s.refresh();
      await s.waitFor('#chat');
      await expect.poll(() => s.textOf('.msg.user .text')).toBe('second webkit chat');
      await click(s, '#chats-open');
      await expect.poll(() => titles(s)).toEqual(['second webkit chat', 'first webkit chat']);
      writeFileSync(join(SCREENSHOTS, 'webkit-chats.png'), await s.screenshot());
      // Delete one, then all (a second tap confirms).
      await click(s, '#chat-list li:last-child .chat-more');
      await click(s, '#chat-list li:last-child .chat-delete');
      await expect.poll(() => titles(s)).toEqual(['second webkit chat']);
      expect((await stored(s)).titles).toEqual(['second webkit chat']);
      // The drawer slides over the chat: closed to write, opened again to delete all.
      await click(s, '#history-close');
      await turn(s, 'third webkit chat', 'three');
      await click(s, '#chats-open');
      await click(s, '#delete-all');
      await click(s, '#delete-all');
      await expect.poll(() => titles(s)).toEqual([]);
      expect((await stored(s)).titles).toEqual([]);
      // Keep chats off: the database goes, and nothing is stored afterwards.
      await click(s, '#history-close');
      await turn(s, 'kept before', 'yes');
      expect((await stored(s)).titles).toEqual(['kept before']);
      await click(s, '#menu-open');
      await click(s, '#keep-chats');
      await expect.poll(async () => (await stored(s)).exists).toBe(false);
      await click(s, '#settings-close');
      await turn(s, 'not kept', 'no');
      expect(await stored(s)).toEqual({ exists: false, titles: [] });
    });
  });
});

describe('WebKit: chat actions', () => {
  it('copy buttons, regenerate, edit and resend, and the system prompt sent first', async () => {
    await withSession(desk.relay.url, async (s) => {
      // The page's clipboard call, captured (WebKit asks the user before a page may read it back).
      await s.exec(`window.__copied = []; Object.defineProperty(navigator, 'clipboard', { configurable: true, value: { writeText: (t) => { window.__copied.push(t); return Promise.resolve(); } } });`);
      await click(s, '#system-open');
      const prompt = await s.waitFor('#system-prompt');
      await whenInteractable(async () => {
        await s.clear(prompt);
        await s.type(prompt, 'Answer like a poet.');
      });
      // The system prompt lives in the chat's own sheet; it is saved as typed.
      await click(s, '#system-close');
      await turn(s, 'Show code', 'Here:\n\n```js\nconst x = 1;\n```\n');
      expect(lastSent()[0]).toEqual({ role: 'system', content: 'Answer like a poet.' });
      await click(s, '.reply .copy-code');
      await click(s, '.msg.user .copy-msg');
      await click(s, '.msg.assistant .copy-msg');
      await expect.poll(() => s.exec<string[]>('return window.__copied;')).toEqual(['const x = 1;\n', 'Show code', 'Here:\n\n```js\nconst x = 1;\n```\n']);
      await expect.poll(() => s.count('.reply code .hljs-keyword')).toBeGreaterThan(0);
      writeFileSync(join(SCREENSHOTS, 'webkit-code.png'), await s.screenshot());

      desk.ollama.set({ mode: 'normal', reply: ['Regenerated.'] });
      await click(s, '.regen');
      await expect.poll(() => s.textOf('.msg.assistant:last-of-type .reply')).toContain('Regenerated.');
      expect(lastSent()).toEqual([
        { role: 'system', content: 'Answer like a poet.' },
        { role: 'user', content: 'Show code' },
      ]);
      expect(await s.count('.msg.assistant')).toBe(1);

      await turn(s, 'second question', 'second answer');
      await click(s, '.msg.user:nth-of-type(3) .edit-msg');
      expect(await s.exec('return document.querySelector("form.compose textarea").value;')).toBe('second question');
      const box = await s.find('form.compose textarea[name="message"]');
      await whenInteractable(async () => {
        await s.clear(box);
        await s.type(box, 'edited question');
      });
      desk.ollama.set({ mode: 'normal', reply: ['edited answer'] });
      await click(s, 'form.compose button[type="submit"]');
      await expect.poll(() => s.textOf('.msg.assistant:last-of-type .reply')).toContain('edited answer');
      expect(lastSent()).toEqual([
        { role: 'system', content: 'Answer like a poet.' },
        { role: 'user', content: 'Show code' },
        { role: 'assistant', content: 'Regenerated.' },
        { role: 'user', content: 'edited question' },
      ]);
      expect(await s.count('ol.log > li')).toBe(4);
    });
  });
});

describe('WebKit: the reply kept, Retry, the chat screen (issue 24)', () => {
  const PIECES = Array.from({ length: 24 }, (_, i) => `w${i} `);
  const reply = (s: Session) => s.exec<string>(`const r = document.querySelectorAll('.msg.assistant .reply'); return r.length ? r[r.length - 1].textContent.trim() : '';`);
  const chatCalls = () => desk.ollama.requests.filter((r) => r.path === '/api/chat').length;

  it('a reload mid-reply resumes the same reply, with one provider call', async () => {
    await withSession(desk.relay.url, async (s) => {
      desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: PIECES });
      const calls = chatCalls();
      const box = await s.waitFor('form.compose textarea[name="message"]');
      await s.type(box, 'A long one in WebKit');
      await click(s, 'form.compose button[type="submit"]');
      await expect.poll(() => reply(s), { timeout: 10_000 }).toContain('w6');
      await s.refresh();
      await s.waitFor('#chat');
      await expect.poll(() => s.count('.msg.assistant .reply[aria-busy="false"]'), { timeout: 15_000 }).toBe(1);
      expect(await reply(s)).toBe(PIECES.join('').trim());
      expect(await s.count('.msg.user')).toBe(1);
      expect(chatCalls()).toBe(calls + 1);
    });
  });

  it('the provider down: plain words and Retry, which works once it is up', async () => {
    await withSession(desk.relay.url, async (s) => {
      await click(s, '#new-chat');
      desk.relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:9', model: 'qwen3' });
      try {
        const box = await s.waitFor('form.compose textarea[name="message"]');
        await s.type(box, 'Anyone?');
        await click(s, 'form.compose button[type="submit"]');
        await expect.poll(() => s.textOf('.msg.assistant .note .note-text'), { timeout: 10_000 }).toBe("Your computer can't reach Ollama. Start it, then tap Retry.");
      } finally {
        desk.relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: desk.ollama.url, model: 'qwen3' });
      }
      expect(await s.count('.msg.assistant .reply.cursor')).toBe(0);
      writeFileSync(join(SCREENSHOTS, 'webkit-retry.png'), await s.screenshot());
      desk.ollama.set({ mode: 'normal', reply: ['Up', ' again.'] });
      await click(s, '.msg.assistant .note .retry');
      await expect.poll(() => s.count('.msg.assistant .reply[aria-busy="false"]'), { timeout: 10_000 }).toBe(1);
      expect(await reply(s)).toBe('Up again.');
    });
  });

  it('the empty state, the composer growing, 44 px targets and no serious axe-core violation', async () => {
    await withSession(desk.relay.url, async (s) => {
      await click(s, '#new-chat');
      await s.waitFor('#empty');
      await expect.poll(() => s.textOf('#empty-model'), { timeout: 10_000 }).toBe('qwen3 will answer');
      expect(await s.count('.suggestion')).toBe(3);
      writeFileSync(join(SCREENSHOTS, 'webkit-empty.png'), await s.screenshot());
      const height = () => s.exec<number>('return document.getElementById("message").getBoundingClientRect().height;');
      const h0 = await height();
      // Set as a paste would (WebDriver's typed newline is an Enter key, which sends on a desktop keyboard).
      await s.exec('const m = document.getElementById("message"); m.value = "one\\ntwo\\nthree\\nfour"; m.dispatchEvent(new Event("input"));');
      await expect.poll(height).toBeGreaterThan(h0 + 30);
      const small = await s.exec<string[]>(`
        return [...document.querySelectorAll('button, a[href], textarea, select, summary, input:not([type=hidden])')].filter((e) => {
          const r = (e.type === 'checkbox' ? e.closest('label') : e).getBoundingClientRect();
          return r.width > 0 && r.height > 0 && (r.width < 43.5 || r.height < 43.5);
        }).map((e) => e.id || e.className);`);
      expect(small).toEqual([]);
      await s.exec(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8') + '\nwindow.__axe = null; axe.run(document, { resultTypes: ["violations"] }).then((r) => { window.__axe = r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id); });');
      await expect.poll(() => s.exec<string[] | null>('return window.__axe;'), { timeout: 20_000 }).toEqual([]);
    });
  });
});
