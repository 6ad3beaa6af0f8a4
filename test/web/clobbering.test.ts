/**
 * Issue 18, finding 5: model output must not take over the web client's controls. A reply is
 * rendered into the page's own document, so HTML in it that reuses the page's ids or names (DOM
 * clobbering), points at the page's elements (`<label for>`, `form=`), or borrows the page's
 * classes must not change what Send sends, leave Send disabled, or act on the page's buttons.
 * Each case is a stand-in Ollama reply; then the user types and sends, and the provider must
 * receive the user's own words.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { lastReply, phone, replyFinished, send, sleep, usePhoneSuite } from './harness';

const suite = usePhoneSuite({ mode: 'normal' });
const { desk, cleanups } = suite;

const MODEL_TEXT = 'model-chosen';
/** Every id in index.html: the names a reply must not be able to take. */
const PAGE_IDS = [
  'conn', 'unpair', 'pair', 'pair-title', 'pair-form', 'pair-json', 'pair-error', 'pair-submit', 'info', 'info-title',
  'info-host', 'info-version', 'info-warning', 'test-conn', 'chat', 'chat-title', 'log', 'chat-status', 'compose',
  'message', 'new-chat', 'stop', 'send', 'chats-open', 'settings', 'keep-chats', 'forget',
  'scan-open', 'scan', 'scan-video', 'scan-stop', 'scan-note', 'code-form', 'pair-code', 'code-error', 'code-submit',
  'devices', 'devices-title', 'device-list', 'devices-note',
  'history', 'history-title', 'history-new', 'history-empty', 'chat-list', 'delete-all', 'store-error',
  'system', 'system-prompt', 'editing', 'edit-cancel', 'push-bell', 'push-note',
  'model-bar', 'model-name', 'model-change', 'picker', 'pick-provider', 'pick-model', 'picker-error', 'picker-cancel',
  'picker-use', 'thumbs', 'attach-error', 'photo-input', 'attach', 'photo-budget',
  'status-dot', 'chat-heading', 'menu-open', 'empty', 'empty-host', 'empty-model', 'suggestions', 'scrim',
  'settings-sheet', 'settings-title', 'settings-close', 'unpair-confirm', 'unpair-cancel', 'unpair-yes',
  'device', 'device-name', 'device-note',
  'toast', 'toast-text', 'toast-undo', 'history-close',
  'system-open', 'chat-search', 'chats-where', 'system-sheet', 'system-title', 'system-close',
];

async function openChat(): Promise<{ page: Page }> {
  const { context, page, console } = await phone(suite.browser);
  // A clobbered control shows up as a script error (a <span> has no .value, a <fieldset> no requestSubmit).
  cleanups.push(async () => {
    await context.close();
    expect(console.filter((l) => l.startsWith('pageerror'))).toEqual([]);
  });
  await page.goto(webClientLink(desk.relay.url, desk.relay.token));
  await page.locator('#chat').waitFor();
  return { page };
}

/** The controls as the page's own markup places them, whatever ids other elements carry. */
const composer = (page: Page) => page.locator('form.compose textarea[name="message"]');
const sendButton = (page: Page) => page.locator('form.compose button[type="submit"]');
const stopButton = (page: Page) => page.locator('form.compose button.stop');
const newChatButton = (page: Page) => page.locator('header.bar button[aria-label="New chat"]');

function chatRequests() {
  return desk.ollama.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/api/chat'));
}

/** The first turn: the user asks, the model answers with `html` among ordinary Markdown. */
async function hostileReply(page: Page, html: string): Promise<void> {
  desk.ollama.set({ mode: 'normal', reply: ['Here is the table you asked for.\n\n', html, '\n\nAnything else?'] });
  await send(page, 'Show me something');
  await replyFinished(page);
  expect(await lastReply(page).textContent()).toContain('Anything else?');
}

/** The user types `text` and presses Send (as a user would: the page's own textarea and button). */
async function userSends(page: Page, text: string, how: 'click' | 'ctrl-enter' = 'click'): Promise<string> {
  desk.ollama.set({ mode: 'normal', reply: ['Fine.'] });
  const before = chatRequests().length;
  const replies = await page.locator('.msg.assistant').count();
  await composer(page).fill(text);
  if (how === 'click') await sendButton(page).click({ timeout: 10_000 });
  else await composer(page).press('Control+Enter');
  await expect.poll(() => chatRequests().length, { timeout: 10_000 }).toBe(before + 1);
  await expect.poll(() => page.locator('.msg.assistant').count(), { timeout: 10_000 }).toBe(replies + 1);
  await replyFinished(page);
  const messages = (chatRequests().at(-1)!.body as { messages: { role: string; content: string }[] }).messages;
  expect(messages.at(-1)!.role).toBe('user');
  return messages.at(-1)!.content;
}

/** Send is usable, Stop is hidden, New chat is usable: the page is idle as it should be. */
async function expectIdleControls(page: Page): Promise<void> {
  expect(await sendButton(page).isEnabled()).toBe(true);
  expect(await stopButton(page).isVisible()).toBe(false);
  expect(await newChatButton(page).isEnabled()).toBe(true);
  expect(await composer(page).inputValue()).toBe('');
}

/** No id in the page resolves to an element of a reply, by getElementById or window's named access. */
async function expectPageIdsIntact(page: Page): Promise<void> {
  const hijacked = await page.evaluate((ids) => {
    const w = globalThis as any;
    const doc = w.document;
    const own = (el: any) => !!el && el.nodeType === 1 && !el.closest('.reply');
    // Named access yields the element, a collection when several share the name, or nothing
    // when a built-in (window.stop) takes precedence.
    const named = (v: any) => (v instanceof w.Element ? own(v) : !(v instanceof w.HTMLCollection));
    return ids.filter((id) => !own(doc.getElementById(id)) || !named(w[id]));
  }, PAGE_IDS);
  expect(hijacked).toEqual([]);
}

describe('model output cannot take over the web client (issue 18, finding 5)', () => {
  it('<data id="message" value=…> does not choose what the next Send carries', async () => {
    const { page } = await openChat();
    await hostileReply(page, `<data id="message" value="${MODEL_TEXT}">a footnote</data>`);
    expect(await userSends(page, 'my own words')).toBe('my own words');
    await expectIdleControls(page);
    expect(await page.locator('.msg.user').last().textContent()).toContain('my own words');
    await expectPageIdsIntact(page);
  });

  it('<output id="message" name="message"> (a form-associated element) does not either', async () => {
    const { page } = await openChat();
    await hostileReply(page, `<output id="message" name="message">${MODEL_TEXT}</output>`);
    expect(await userSends(page, 'what I typed')).toBe('what I typed');
    await expectIdleControls(page);
    await expectPageIdsIntact(page);
  });

  it('<span id="send">, id="stop", id="new-chat" do not leave Send disabled; Stop and New chat still work', async () => {
    const { page } = await openChat();
    await hostileReply(page, '<span id="send"></span><span id="stop"></span><span id="new-chat"></span> noted.');
    await expectIdleControls(page);
    expect(await userSends(page, 'second message')).toBe('second message');
    await expectIdleControls(page);
    // A slow reply: Stop shows while it streams and ends it.
    desk.ollama.set({ mode: 'normal', chunkDelayMs: 150, reply: Array.from({ length: 30 }, (_, i) => ` p${i}`) });
    await composer(page).fill('talk slowly');
    await sendButton(page).click({ timeout: 10_000 });
    await expect.poll(() => lastReply(page).textContent()).toContain('p1');
    expect(await sendButton(page).isEnabled()).toBe(false);
    await stopButton(page).click({ timeout: 10_000 });
    await expect.poll(() => page.locator('.msg.assistant .note').last().textContent()).toContain('Stopped');
    await expectIdleControls(page);
    await expectPageIdsIntact(page);
    // New chat clears the page's own log.
    await newChatButton(page).click({ timeout: 10_000 });
    await expect.poll(() => page.locator('ol.log > li').count()).toBe(0);
  });

  it('<form id="compose">, <input name="message">, <textarea>, <button id="send"> are not rendered as controls', async () => {
    const { page } = await openChat();
    await hostileReply(
      page,
      `<form id="compose" name="compose" action="/v1/chat/cancel"><input id="message" name="message" value="${MODEL_TEXT}">` +
        `<textarea id="message" name="message">${MODEL_TEXT}</textarea><select name="send"><option>x</option></select>` +
        `<button id="send" type="submit">Send</button></form>`,
    );
    expect(await lastReply(page).locator('form, input, textarea, select, option, button').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Send' }).count()).toBe(1);
    await expectPageIdsIntact(page);
    expect(await userSends(page, 'typed by me')).toBe('typed by me');
    await expectIdleControls(page);
  });

  it('<fieldset id="compose"> does not break Ctrl+Enter', async () => {
    const { page } = await openChat();
    await hostileReply(page, '<fieldset id="compose" name="compose"><legend>Options</legend>none</fieldset>');
    expect(await userSends(page, 'sent with the keyboard', 'ctrl-enter')).toBe('sent with the keyboard');
    await expectIdleControls(page);
    await expectPageIdsIntact(page);
  });

  it('<label for="unpair">, <label for="new-chat"> in a reply do not press the page’s buttons', async () => {
    const { page } = await openChat();
    await hostileReply(page, '<label for="unpair">Tap to read more</label> and <label for="new-chat">tap to expand</label>');
    await lastReply(page).getByText('tap to expand').click({ timeout: 10_000 });
    await sleep(200);
    expect(await page.locator('ol.log > li').count()).toBe(2);
    await lastReply(page).getByText('Tap to read more').click({ timeout: 10_000 });
    await sleep(200);
    expect(await page.locator('#pair').isVisible()).toBe(false);
    expect(await page.locator('#chat').isVisible()).toBe(true);
    expect(await lastReply(page).locator('[for], [form], [list], [popovertarget], [commandfor]').count()).toBe(0);
    expect(await userSends(page, 'still paired')).toBe('still paired');
  });

  it('ids and names in a reply are kept apart from the page’s and from window’s named properties', async () => {
    const { page } = await openChat();
    await hostileReply(
      page,
      '<a name="message" id="DESKRELAY_WS_AFTER_MS" href="https://example.com/">link</a> ' +
        '<details id="log" name="send"><summary id="conn">more</summary><span id="scrollingElement" name="visibilityState">x</span></details>' +
        '<div id="chat-status" aria-owns="send" aria-labelledby="message" data-x="1">status</div>',
    );
    await expectPageIdsIntact(page);
    const named = await lastReply(page)
      .locator('[id], [name]')
      .evaluateAll((els) => els.flatMap((e) => [e.getAttribute('id'), e.getAttribute('name')]).filter((v) => v !== null));
    expect(named.length).toBeGreaterThan(0);
    for (const value of named) expect(value).toMatch(/^user-content-/);
    expect(await page.evaluate(() => typeof (globalThis as any).DESKRELAY_WS_AFTER_MS)).toBe('undefined');
    expect(await lastReply(page).locator('[aria-owns], [aria-labelledby]').count()).toBe(0);
    // The page's own label still names the page's own textarea.
    expect(await page.getByLabel('Message', { exact: true }).evaluate((el) => el.closest('form.compose') !== null)).toBe(true);
    expect(await userSends(page, 'plain text')).toBe('plain text');
    await expectIdleControls(page);
  });

  it('a reply cannot dress up as the user with the page’s classes; code keeps its language class', async () => {
    const { page } = await openChat();
    await hostileReply(
      page,
      '<div class="msg user"><div class="who">You</div>Please paste the pairing token here.</div>\n\n```js\nlet x = 1;\n```',
    );
    expect(await page.locator('.msg.user').count()).toBe(1);
    expect(await lastReply(page).locator('.msg, .who, .user').count()).toBe(0);
    expect(await lastReply(page).locator('code.language-js').count()).toBe(1);
  });

  // Belt and braces: if something did slip past the sanitiser with a page id, the page still
  // holds its own controls (it looks nothing up by id once loaded).
  it('elements with the page’s ids placed before the page’s own still change nothing', async () => {
    const { page } = await openChat();
    await page.evaluate((modelText) => {
      const doc = (globalThis as any).document;
      const decoy = doc.createElement('div');
      decoy.innerHTML =
        `<data id="message" value="${modelText}"></data><span id="send"></span><span id="stop"></span>` +
        '<span id="new-chat"></span><ol id="log"></ol><p id="chat-status"></p><span id="compose"></span>';
      doc.body.prepend(decoy);
    }, MODEL_TEXT);
    expect(await userSends(page, 'mine, not the decoy’s')).toBe('mine, not the decoy’s');
    await expectIdleControls(page);
    expect(await page.locator('ol.log > li').count()).toBe(2);
    expect(await userSends(page, 'and again', 'ctrl-enter')).toBe('and again');
    await expectIdleControls(page);
  });
});
