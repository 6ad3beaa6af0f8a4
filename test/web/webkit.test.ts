/**
 * The web client in WebKit (every iPhone browser is WebKit): WebKitGTK's MiniBrowser driven over
 * W3C WebDriver (test/web/webdriver.ts) at phone size, against the real relay and a stand-in
 * Ollama, through the test proxy: pairing, a streamed reply, Markdown (sanitised), Stop, and
 * resume after the connection drops (WebKit reports it as `TypeError: Load failed`).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { LOAD_FAILED_ONCE, pairingJson, SCREENSHOTS, sleep, type Desk, phoneSession, useWebKitSuite, sendMessage } from './harness';
import type { TestProxy } from './proxy';
import type { Session, WebKit } from './webdriver';

let webkit: WebKit;
let desk: Desk;
let proxy: TestProxy;
useWebKitSuite({ mode: 'normal' }, (s) => ({ webkit, desk, proxy } = s), { proxy: true });

const openSession = () => phoneSession(webkit);

const REPLY = '.msg.assistant:last-of-type .reply';
const streamPosts = () => proxy.seen.filter((l) => l === 'POST /v1/chat/stream').length;


async function finished(s: Session, timeout = 10_000): Promise<void> {
  await expect
    .poll(() => s.exec<string | null>(`const r = document.querySelectorAll('.msg.assistant .reply'); return r.length ? r[r.length - 1].getAttribute('aria-busy') : null;`), { timeout })
    .toBe('false');
}

async function paired(s: Session): Promise<void> {
  await s.go(webClientLink(proxy.url, desk.relay.token));
  await s.waitFor('#chat');
}

describe('WebKit', () => {
  it('pairs by pasting the pairing JSON; the token leaves no trace in the address', async () => {
    const s = await openSession();
    try {
      await s.go(`${proxy.url}/`);
      const box = await s.waitFor('#pair-json');
      await s.type(box, pairingJson(proxy.url, desk.relay.token));
      await s.click(await s.find('#pair-submit'));
      await expect.poll(() => s.textOf('#info-version'), { timeout: 10_000 }).toBe('9.8.7');
      await s.waitFor('#chat');
      expect(await s.url()).not.toContain(desk.relay.token);
      writeFileSync(join(SCREENSHOTS, 'webkit-paired.png'), await s.screenshot());
      // The #token= link opened again on the open page (only the fragment changes, no reload)
      // pairs too, and leaves the address bar.
      await s.go(webClientLink(proxy.url, desk.relay.token));
      await s.waitFor('#chat');
      await expect.poll(() => s.url()).not.toContain('token');
      await expect.poll(() => s.textOf('#info-version')).toBe('9.8.7');
    } finally {
      await s.close();
    }
  });

  it('streams a reply token by token and renders Markdown through the sanitiser', async () => {
    const s = await openSession();
    try {
      await paired(s);
      desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: ['# Title\n\n', '**bold** and `code`\n\n', '- one\n- two\n\n', '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>', 'The', ' end.'] });
      await sendMessage(s, 'Format something');
      const seen = new Set<string>();
      const until = Date.now() + 8000;
      while (Date.now() < until) {
        const state = await s.exec<{ busy: string | null; text: string }>(
          `const r = document.querySelector(arguments[0]); return r ? { busy: r.getAttribute('aria-busy'), text: r.textContent.trim() } : { busy: null, text: '' };`,
          REPLY,
        );
        if (state.busy === 'true' && state.text) seen.add(state.text);
        if (state.busy === 'false') break;
        await sleep(40);
      }
      await finished(s);
      expect(seen.size).toBeGreaterThanOrEqual(2);
      expect(await s.textOf(`${REPLY} h1`)).toBe('Title');
      expect(await s.textOf(`${REPLY} strong`)).toBe('bold');
      expect(await s.count(`${REPLY} li`)).toBe(2);
      expect(await s.count(`${REPLY} script, ${REPLY} img, ${REPLY} [onerror]`)).toBe(0);
      expect(await s.exec('return window.__pwned === undefined;')).toBe(true);
      expect((await s.textOf(REPLY))?.trim().endsWith('The end.')).toBe(true);
      writeFileSync(join(SCREENSHOTS, 'webkit-markdown.png'), await s.screenshot());
    } finally {
      await s.close();
    }
  });

  it('Stop ends the reply and the provider request', async () => {
    const s = await openSession();
    try {
      await paired(s);
      desk.ollama.set({ mode: 'normal', chunkDelayMs: 150, reply: Array.from({ length: 40 }, (_, i) => ` w${i}`) });
      await sendMessage(s, 'Talk for a long time');
      await expect.poll(() => s.textOf(REPLY), { timeout: 10_000 }).toContain('w1');
      await s.click(await s.find('form.compose button.stop'));
      await expect.poll(() => s.exec<string>(`const n = document.querySelectorAll('.msg.assistant .note'); return n[n.length - 1].textContent;`)).toContain('Stopped');
      const closed = await Promise.race([desk.ollama.lastRequestClosed.then(() => true), sleep(3000).then(() => false)]);
      expect(closed).toBe(true);
      expect(desk.ollama.lastRequestAborted).toBe(true);
      expect(await s.exec('return document.querySelector("form.compose button[type=submit]").disabled;')).toBe(false);
      expect(await s.textOf(REPLY)).not.toContain('w39');
    } finally {
      await s.close();
    }
  });

  it('resumes after the connection drops mid-reply, with one provider call', async () => {
    const s = await openSession();
    try {
      await paired(s);
      // Record what WebKit says when the stream dies, without touching the page's code path.
      await s.exec(`
        window.__streamErrors = [];
        const read = ReadableStreamDefaultReader.prototype.read;
        ReadableStreamDefaultReader.prototype.read = function () {
          return read.call(this).catch((e) => { window.__streamErrors.push(String(e)); throw e; });
        };`);
      const pieces = Array.from({ length: 16 }, (_, i) => `p${i} `);
      desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: pieces });
      const calls = desk.ollama.requests.filter((r) => r.path === '/api/chat').length;
      const posts = streamPosts();
      await sendMessage(s, 'Tell me a long story');
      await expect.poll(() => s.textOf(REPLY), { timeout: 10_000 }).toContain('p2');
      proxy.cut();
      await finished(s, 15_000);
      expect((await s.textOf(REPLY))?.trim()).toBe(pieces.join('').trim());
      expect(streamPosts()).toBe(posts + 2);
      expect(desk.ollama.requests.filter((r) => r.path === '/api/chat').length).toBe(calls + 1);
      expect(await s.count('.msg.assistant.failed')).toBe(0);
      // What WebKit reported for the cut (for the record: a TypeError, or the body just ending).
      console.log(`[webkit] the cut stream surfaced as: ${(await s.exec<string[]>('return window.__streamErrors;')).join(' | ') || 'the body ending early'}`);
      writeFileSync(join(SCREENSHOTS, 'webkit-resumed.png'), await s.screenshot());
    } finally {
      await s.close();
    }
  });

  it('treats "TypeError: Load failed" as a dropped connection and resumes', async () => {
    const s = await openSession();
    try {
      await paired(s);
      await s.exec(LOAD_FAILED_ONCE);
      const pieces = Array.from({ length: 12 }, (_, i) => `q${i} `);
      desk.ollama.set({ mode: 'normal', chunkDelayMs: 80, reply: pieces });
      const calls = desk.ollama.requests.filter((r) => r.path === '/api/chat').length;
      const posts = streamPosts();
      await sendMessage(s, 'Again, please');
      await finished(s, 15_000);
      expect(await s.exec('return window.__loadFailed;')).toBe(1);
      expect((await s.textOf(REPLY))?.trim()).toBe(pieces.join('').trim());
      expect(streamPosts()).toBe(posts + 2);
      expect(desk.ollama.requests.filter((r) => r.path === '/api/chat').length).toBe(calls + 1);
      expect(await s.count('.msg.assistant.failed')).toBe(0);
    } finally {
      await s.close();
    }
  });
});
