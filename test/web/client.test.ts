/**
 * The phone web client in headless Chromium at a phone viewport, against the real relay and a
 * stand-in Ollama: pairing (pasted JSON and the #token= link), test connection, streaming,
 * thinking, Markdown sanitising, Stop, and the error states.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findWebRoot, webClient } from '../../server/src/http/static';
import { webClientLink } from '../../server/src/session/pairing';
import {
  countRequests,
  ensureVendor,
  lastReply,
  pairByPaste,
  pairingJson,
  replyFinished,
  SCREENSHOTS,
  send,
  sleep,
  usePhoneSuite,
  openSettings,
} from './harness';

const { desk, cleanups, openPhone } = usePhoneSuite({ mode: 'normal' });

function expectTokenNowhere(token: string, consoleLines: string[]) {
  expect(desk.relay.logLines.join('\n')).not.toContain(token);
  expect(consoleLines.join('\n')).not.toContain(token);
}

describe('serving the page', () => {
  it('serves the page at / with strict headers, and unknown paths still get the CONTRACT 404', async () => {
    const page = await fetch(`${desk.relay.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain('unsafe');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    for (const path of ['/app.js', '/app.css']) {
      expect((await fetch(`${desk.relay.url}${path}`)).status, path).toBe(200);
    }
    for (const path of ['/nope', '/v1/nope', '/v1', '/.gitignore']) {
      const res = await fetch(`${desk.relay.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('route.not_found');
    }
    const post = await fetch(`${desk.relay.url}/`, { method: 'POST' });
    expect(post.status).toBe(404);
  });

  it('finds media/web beside the bundle (dist/) and beside the source (server/src/http/)', () => {
    const root = join(__dirname, '..', '..');
    const web = join(root, 'media', 'web');
    expect(findWebRoot(join(root, 'dist'))).toBe(web);
    expect(findWebRoot(join(root, 'server', 'src', 'http'))).toBe(web);
    expect(findWebRoot(join(root, 'server', 'src', 'nowhere', 'deeper'))).toBeUndefined();
    expect(findWebRoot()).toBe(web);
  });

  it('answers HEAD / and HEAD /v1/health without a body', async () => {
    const head = await fetch(`${desk.relay.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    // HEAD /v1/health answers like GET without a body (issue 18, defence in depth).
    const healthHead = await fetch(`${desk.relay.url}/v1/health`, { method: 'HEAD' });
    expect(healthHead.status).toBe(200);
    expect(await healthHead.text()).toBe('');
    expect((await fetch(`${desk.relay.url}/v1/health`)).status).toBe(200);
  });

  it('builds the link with the token in the fragment', () => {
    expect(webClientLink('https://a-b.trycloudflare.com', 'dr_abc')).toBe('https://a-b.trycloudflare.com/#token=dr_abc');
    expect(webClientLink('https://a-b.trycloudflare.com/', 'dr_abc')).toBe('https://a-b.trycloudflare.com/#token=dr_abc');
  });
});

describe('pairing', () => {
  it('pairs by pasting the pairing JSON and shows hostname and version', async () => {
    const { page, console } = await openPhone();
    await page.goto(`${desk.relay.url}/`);
    await page.screenshot({ path: join(SCREENSHOTS, 'pair.png') });
    await pairByPaste(page, desk.relay.url, pairingJson(desk.relay.url, desk.relay.token));
    await expect.poll(() => page.locator('#info-version').textContent()).toBe('9.8.7');
    expect(await page.locator('#info-host').textContent()).toBeTruthy();
    await expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');
    expect(await page.getByLabel('Message', { exact: true }).isVisible()).toBe(true);
    // Test connection asks /v1/remote/info again.
    const before = desk.relay.logLines.filter((l) => l.includes('/v1/remote/info')).length;
    await openSettings(page);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect.poll(() => desk.relay.logLines.filter((l) => l.includes('/v1/remote/info')).length).toBe(before + 1);
    await page.screenshot({ path: join(SCREENSHOTS, 'paired.png') });
    expectTokenNowhere(desk.relay.token, console);
  });

  it('pairs from the #token= link; the fragment never reaches the server and leaves the address bar', async () => {
    const { page, console } = await openPhone();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(webClientLink(desk.relay.url, desk.relay.token));
    await expect.poll(() => page.locator('#info-version').textContent()).toBe('9.8.7');
    expect(page.url()).not.toContain('token');
    for (const url of requests) expect(url).not.toContain(desk.relay.token);
    expectTokenNowhere(desk.relay.token, console);
  });

  it('explains bad pairing JSON', async () => {
    const { page } = await openPhone();
    await pairByPaste(page, desk.relay.url, 'this is not json');
    await expect.poll(() => page.locator('#pair-error').textContent()).toContain('not valid JSON');
    await page.getByLabel('Pairing JSON').fill('{"url":"https://x.example"}');
    await page.getByRole('button', { name: 'Connect' }).click();
    await expect.poll(() => page.locator('#pair-error').textContent()).toContain('no "token"');
    await page.screenshot({ path: join(SCREENSHOTS, 'pair-error.png') });
  });

  it('says the token is no longer valid on a 401', async () => {
    const { page } = await openPhone();
    await pairByPaste(page, desk.relay.url, pairingJson(desk.relay.url, `dr_${'x'.repeat(43)}`));
    await expect.poll(() => page.locator('#pair-error').textContent()).toContain('no longer valid');
    expect(await page.locator('#pair').isVisible()).toBe(true);
  });

  it('detects a URL that serves something other than DeskRelay', async () => {
    ensureVendor();
    const web = webClient()!;
    const other: Server = createServer((req, res) => {
      if (req.url === '/v1/remote/info') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        return res.end(JSON.stringify({ service: 'something-else', version: '1.0.0' }));
      }
      web(req, res, () => {
        res.writeHead(404);
        res.end();
      });
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => other.close(r)));
    const base = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    const { page } = await openPhone();
    await pairByPaste(page, base, pairingJson(base, desk.relay.token));
    await expect.poll(() => page.locator('#pair-error').textContent()).toContain('not a DeskRelay relay');
  });
});

describe('chatting', () => {
  it('streams a reply that grows token by token', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 120, reply: ['One', ' two', ' three', ' four', ' five', ' six.'] });
    const { page, console } = await openPhone();
    await page.goto(webClientLink(desk.relay.url, desk.relay.token));
    await page.locator('#chat').waitFor();
    await send(page, 'Count for me');
    const seen = new Set<string>();
    const start = Date.now();
    while (Date.now() - start < 5000) {
      const busy = await lastReply(page).getAttribute('aria-busy').catch(() => null);
      const text = ((await lastReply(page).textContent().catch(() => '')) ?? '').trim();
      if (text && busy === 'true') seen.add(text);
      if (busy === 'false') break;
      await sleep(30);
    }
    await replyFinished(page);
    // Several partial replies were on screen before the last token arrived.
    expect(seen.size).toBeGreaterThanOrEqual(2);
    for (const partial of seen) expect('One two three four five six.'.startsWith(partial)).toBe(true);
    expect((await lastReply(page).textContent())?.trim()).toBe('One two three four five six.');
    expect(await lastReply(page).getAttribute('aria-live')).toBe('polite');
    // The conversation so far goes with the next message (memory only).
    desk.ollama.set({ mode: 'normal', reply: ['Seven.'] });
    await send(page, 'Go on');
    await expect.poll(() => page.locator('.msg.assistant').count()).toBe(2);
    await replyFinished(page);
    const last = desk.ollama.requests.at(-1)!.body as { messages: { role: string; content: string }[] };
    expect(last.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(last.messages[1]!.content).toBe('One two three four five six.');
    expect(await page.evaluate(() => JSON.stringify((globalThis as any).localStorage).length)).toBeLessThan(3);
    await page.screenshot({ path: join(SCREENSHOTS, 'chat.png'), fullPage: true });
    expectTokenNowhere(desk.relay.token, console);
  });

  it('shows thinking collapsed under a Thinking toggle that expands', async () => {
    desk.ollama.set({ mode: 'thinking', thinking: ['Let me', ' think', ' hard.'], reply: ['The', ' answer', ' is 42.'] });
    const { page } = await openPhone('dark');
    await page.goto(webClientLink(desk.relay.url, desk.relay.token));
    await page.locator('#chat').waitFor();
    await send(page, 'What is the answer?');
    await replyFinished(page);
    const msg = page.locator('.msg.assistant').last();
    const details = msg.locator('details.thinking');
    expect(await details.isVisible()).toBe(true);
    expect(await details.evaluate((d: any) => d.open)).toBe(false);
    expect(await msg.locator('.thinking-text').isVisible()).toBe(false);
    expect((await lastReply(page).textContent())?.trim()).toBe('The answer is 42.');
    await page.screenshot({ path: join(SCREENSHOTS, 'thinking-collapsed-dark.png') });
    await msg.locator('details.thinking summary').click();
    expect(await details.evaluate((d: any) => d.open)).toBe(true);
    expect(await msg.locator('.thinking-text').textContent()).toBe('Let me think hard.');
    await page.screenshot({ path: join(SCREENSHOTS, 'thinking-open-dark.png') });
    // Reasoning is not sent back as history.
    desk.ollama.set({ mode: 'normal', reply: ['ok'] });
    await send(page, 'thanks');
    await expect.poll(() => page.locator('.msg.assistant').count()).toBe(2);
    await replyFinished(page);
    const body = desk.ollama.requests.at(-1)!.body as { messages: { role: string; content: string }[] };
    expect(body.messages[1]!.content).toBe('The answer is 42.');
  });

  it('renders Markdown and neutralises script and onerror payloads from the model', async () => {
    desk.ollama.set({
      mode: 'normal',
      reply: [
        '# Title\n\n**bold** and `code`\n\n',
        '- one\n- two\n\n',
        '<script>window.__pwned = 1</script>\n\n',
        '<img src="x" onerror="window.__pwned = 2">\n\n',
        '[click](javascript:window.__pwned=3) <a href="https://example.com" onclick="window.__pwned=4">ok</a>\n\n',
        '<iframe src="javascript:window.__pwned=5"></iframe><svg onload="window.__pwned=6"></svg>',
      ],
    });
    const { page, console } = await openPhone();
    await page.goto(webClientLink(desk.relay.url, desk.relay.token));
    await page.locator('#chat').waitFor();
    await send(page, 'Format something');
    await replyFinished(page);
    const reply = lastReply(page);
    expect(await reply.locator('h1').textContent()).toBe('Title');
    expect(await reply.locator('strong').textContent()).toBe('bold');
    expect(await reply.locator('code').first().textContent()).toBe('code');
    expect(await reply.locator('li').count()).toBe(2);
    expect(await reply.locator('script, img, iframe, svg').count()).toBe(0);
    expect(await reply.locator('[onerror], [onclick], [onload]').count()).toBe(0);
    const hrefs = await reply.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    for (const href of hrefs) expect(href ?? '').not.toMatch(/^javascript:/i);
    await sleep(200);
    expect(await page.evaluate(() => (globalThis as any).__pwned)).toBeUndefined();
    expect(console.filter((l) => l.startsWith('pageerror'))).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, 'markdown.png'), fullPage: true });
  });

  it('shows a pre-stream error (412 chat.no_provider) as the relay words it', async () => {
    const { page } = await openPhone();
    await page.goto(webClientLink(desk.relay.url, desk.relay.token));
    await page.locator('#chat').waitFor();
    desk.relay.setActive({ ok: false, reason: 'cloud', id: 'deskrelay-cloud' } as never);
    try {
      await send(page, 'hello?');
      await expect.poll(() => page.locator('.msg.assistant .note.error').last().textContent()).toContain('Switch to a local provider');
    } finally {
      desk.relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: desk.ollama.url, model: 'qwen3' });
    }
    expect(await page.getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);
  });

  it('Stop ends the reply on screen and leaves the stream', async () => {
    // Held after two pieces until the end of the test: the stream can only have ended because Stop left it.
    desk.ollama.set({ mode: 'normal', holdAfter: 2, reply: Array.from({ length: 30 }, (_, i) => ` s${i}`) });
    const { page } = await openPhone();
    await page.goto(webClientLink(desk.relay.url, desk.relay.token));
    await page.locator('#chat').waitFor();
    const streams = countRequests(desk.relay, 'POST', '/v1/chat/stream');
    await send(page, 'Say a lot');
    await expect.poll(() => lastReply(page).textContent()).toContain('s1');
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => page.locator('.msg.assistant .note').last().textContent()).toContain('Stopped');
    expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);
    // The relay logs a request when its response closes: the stream was left at once.
    await expect.poll(() => countRequests(desk.relay, 'POST', '/v1/chat/stream'), { timeout: 10_000 }).toBe(streams + 1);
    const text = (await lastReply(page).textContent()) ?? '';
    // The rest of the reply, let go now, reaches nobody: the page keeps what it showed at Stop.
    desk.ollama.release();
    await sleep(400);
    expect(await lastReply(page).textContent()).toBe(text);
    expect(text).not.toContain('s29');
  });

  // A keyed (resumable) generation outlives its connection by design, so the page's Stop also
  // sends POST /v1/chat/cancel with the Idempotency-Key.
  it('Stop aborts the provider request (POST /v1/chat/cancel + Idempotency-Key)', async () => {
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 200, reply: Array.from({ length: 40 }, (_, i) => ` w${i}`) });
    const { page } = await openPhone();
    await page.goto(webClientLink(desk.relay.url, desk.relay.token));
    await page.locator('#chat').waitFor();
    const calls = desk.ollama.requests.length;
    await send(page, 'Talk for a long time');
    await expect.poll(() => lastReply(page).textContent()).toContain('w1');
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => page.locator('.msg.assistant .note').last().textContent()).toContain('Stopped');
    expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(false);
    const closed = await Promise.race([desk.ollama.lastRequestClosed.then(() => true), sleep(3000).then(() => false)]);
    expect(closed).toBe(true);
    expect(desk.ollama.lastRequestAborted).toBe(true);
    expect(desk.ollama.requests.length).toBe(calls + 1);
    const text = (await lastReply(page).textContent()) ?? '';
    expect(text).not.toContain('w39');
    await page.screenshot({ path: join(SCREENSHOTS, 'stopped.png') });
    expect(countRequests(desk.relay, 'POST', '/v1/chat/stream')).toBeGreaterThan(0);
  });
});
