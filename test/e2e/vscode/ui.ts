// UI tests: Playwright drives the real workbench (command palette, clipboard, webview) the way a
// person does. The launcher (scripts/vscode/run-e2e.mjs) runs each test in a fresh browser context.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { freePort, portOpen } from './net';
import { dirname, join } from 'node:path';
import type { BrowserContext, FrameLocator, Locator, Page } from 'playwright-core';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import { startOllamaStandIn } from '../../fixtures/providers/ollama';
import { startOpenAiStandIn } from '../../fixtures/providers/openai';

export interface UiContext {
  page: Page;
  context: BrowserContext;
  /** Opens the workbench on the test workspace with the extension loaded from the checkout. */
  open(): Promise<void>;
  /**
   * Merges into the remote machine's settings (code-server's `Machine/settings.json`): in a remote
   * window VS Code reads machine-scoped settings (port, providers, …) only from there.
   */
  settings(values: Record<string, unknown>): void;
  /** Remembers a secret the launcher must not find in any log. */
  rememberSecret(secret: string): void;
  workspace: string;
  configDir: string;
  artifactsDir: string;
  repoRoot: string;
  log(message: string): void;
}

export interface UiTest {
  title: string;
  run(ctx: UiContext): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function openPalette(page: Page, text: string): Promise<void> {
  await page.keyboard.press('Control+Shift+P');
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${text}`);
}

/** Labels the command palette lists for `text`. */
/**
 * Whether the palette offers exactly this command. The palette draws only the rows that fit on
 * screen, so it is filtered by the title itself rather than read from a list of every DeskRelay command.
 */
async function offered(page: Page, title: string): Promise<boolean> {
  return (await paletteLabels(page, title)).includes(title);
}

async function paletteLabels(page: Page, text: string): Promise<string[]> {
  await openPalette(page, text);
  await sleep(700);
  const labels = await page.locator('.quick-input-list .monaco-list-row .label-name').allTextContents();
  await page.keyboard.press('Escape');
  return labels.map((l) => l.trim());
}

/**
 * Runs a command through the command palette: Ctrl+Shift+P, type the title, Enter.
 * The palette lists only commands known when it opened, so it is reopened until the
 * extension's contributions have arrived.
 */
export async function runCommand(page: Page, title: string, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  for (;;) {
    await openPalette(page, title);
    try {
      await row.waitFor({ timeout: 3_000 });
      await page.keyboard.press('Enter');
      return;
    } catch (err) {
      await page.keyboard.press('Escape');
      if (Date.now() > until) throw err;
    }
  }
}

/**
 * A notification with `text`: its toast, or, when VS Code did not pop one up (it sometimes keeps a
 * new notification in the Notification Center only), its entry there, expanded so its buttons show.
 */
async function notification(page: Page, text: string, timeoutMs = 20_000): Promise<Locator> {
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
  try {
    await toast.waitFor({ timeout: Math.min(8_000, timeoutMs) });
    return toast;
  } catch {
    const item = page.locator('.notifications-center .monaco-list-row', { hasText: text }).first();
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (!(await page.locator('.notifications-center').isVisible())) await runCommand(page, 'Notifications: Show Notifications');
      try {
        await item.waitFor({ timeout: 2_000 });
        break;
      } catch (err) {
        if (Date.now() > until) throw err;
      }
    }
    const expand = item.locator('.codicon-notifications-expand');
    if (await expand.isVisible()) await expand.click();
    return item;
  }
}

async function hideNotificationCenter(page: Page): Promise<void> {
  if (await page.locator('.notifications-center').isVisible()) await runCommand(page, 'Notifications: Hide Notifications');
}

function assert(ok: unknown, message: string): asserts ok {
  if (!ok) throw new Error(message);
}

/** The pairing panel's content: VS Code nests the webview's document in two iframes. */
function pairingFrame(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
}

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** Reads the QR code shown by `image` the way a phone camera would: from its pixels. */
async function readQr(image: Locator): Promise<string | undefined> {
  const png = PNG.sync.read(await image.screenshot());
  return jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height)?.data;
}

export const tests: UiTest[] = [
  {
    title: 'command palette: Start Remote Chat, Copy Pairing JSON, pair, chat, pairing panel',
    async run({ page, context, open, settings, rememberSecret, configDir, artifactsDir, log }) {
      const ollama = await startOllamaStandIn();
      const port = await freePort();
      try {
        settings({
          'deskrelay.port': port,
          'deskrelay.providers': [{ id: 'ollama-ui', kind: 'ollama', baseUrl: ollama.url, model: 'auto' }],
          'deskrelay.activeProvider': 'ollama-ui',
        });
        await open();

        // Contributions loaded (Show Log runs) and, while stopped, the palette offers Start but not Stop.
        await runCommand(page, 'DeskRelay: Show Log');
        assert(await offered(page, 'DeskRelay: Start Remote Chat'), 'Start not offered while stopped');
        assert(!(await offered(page, 'DeskRelay: Stop Remote Chat')), 'Stop offered while stopped');
        assert(!(await offered(page, 'DeskRelay: Copy Pairing JSON')), 'Copy Pairing JSON offered while stopped');

        log('UI:   Start Remote Chat');
        await runCommand(page, 'DeskRelay: Start Remote Chat');
        const started = await notification(page, 'DeskRelay is running on');
        for (const action of ['Copy Pairing JSON', 'Show Pairing QR Code', 'Start Tunnel']) {
          await started.locator('.monaco-button', { hasText: action }).first().waitFor();
        }
        await hideNotificationCenter(page);
        await page.locator('.statusbar-item', { hasText: `DeskRelay: running on :${port}` }).first().waitFor({ timeout: 10_000 });
        assert(!(await offered(page, 'DeskRelay: Start Remote Chat')), 'Start still offered while running');
        assert(await offered(page, 'DeskRelay: Stop Remote Chat'), 'Stop not offered while running');

        log('UI:   Copy Pairing JSON');
        await context.grantPermissions(['clipboard-read', 'clipboard-write']);
        await page.evaluate("navigator.clipboard.writeText('')");
        await runCommand(page, 'DeskRelay: Copy Pairing JSON');
        let clip = '';
        await waitUntil('the pairing JSON on the clipboard', async () => {
          clip = String(await page.evaluate('navigator.clipboard.readText()'));
          return clip.startsWith('{');
        });
        const pairing = JSON.parse(clip) as { url: string; token: string };
        rememberSecret(pairing.token);
        assert(JSON.stringify(Object.keys(pairing)) === '["url","token"]', `pairing keys: ${Object.keys(pairing)}`);
        assert(pairing.url === `http://127.0.0.1:${port}`, `pairing url ${pairing.url}`);
        assert(/^dr_[A-Za-z0-9_-]{43}$/.test(pairing.token), 'token format');
        assert(readFileSync(join(configDir, 'token'), 'utf8').trim() === pairing.token, 'token file differs from the pairing token');
        await notification(page, 'a phone cannot reach it');
        await hideNotificationCenter(page);

        log('UI:   /v1/remote/info and a chat with the pasted token');
        const info = await fetch(`${pairing.url}/v1/remote/info`, { headers: { authorization: `Bearer ${pairing.token}` } });
        assert(info.status === 200, `info status ${info.status}`);
        const body = (await info.json()) as Record<string, unknown>;
        assert(body.service === 'deskrelay' && body.workspaces === 1 && body.providerConfigured === true, `info ${JSON.stringify(body)}`);
        const res = await fetch(`${pairing.url}/v1/chat/stream`, {
          method: 'POST',
          headers: { authorization: `Bearer ${pairing.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello?' }] }),
        });
        assert(res.status === 200, `chat status ${res.status}`);
        const events = (await res.text())
          .split('\n\n')
          .filter((b) => b.startsWith('data: '))
          .map((b) => JSON.parse(b.slice(6)) as { type: string; delta?: string; content?: string });
        const done = events.at(-1);
        assert(done?.type === 'done' && done.content === 'Hello from Ollama!', `stream ${JSON.stringify(events)}`);
        assert(events.slice(0, -1).every((e) => e.type === 'token'), 'only token events before done');
        assert(ollama.requests.some((r) => r.path === '/api/chat'), 'the stand-in provider got no chat');

        log('UI:   Show Pairing QR Code');
        await runCommand(page, 'DeskRelay: Show Pairing QR Code');
        const frame = pairingFrame(page);
        await frame.locator('#qr[src^="data:image/svg+xml;base64,"]').waitFor({ timeout: 20_000 });
        await frame.locator('#link-qr[src^="data:image/svg+xml;base64,"]').waitFor();
        await frame.locator('#url', { hasText: pairing.url }).waitFor();
        await frame.locator('#warnings li', { hasText: 'hold the token' }).waitFor();
        const scanned = await readQr(frame.locator('#qr'));
        assert(scanned === clip, `the pairing QR code reads ${JSON.stringify(scanned)}, not the copied pairing JSON`);
        const scannedLink = await readQr(frame.locator('#link-qr'));
        assert(scannedLink === `${pairing.url}/#token=${pairing.token}`, `the link QR code reads ${JSON.stringify(scannedLink)}`);
        assert(!(await frame.locator('#payload').isVisible()), 'the payload must stay hidden until revealed');
        // Hide the bottom panel (the log opened earlier) so the screenshot shows the whole pairing panel.
        if (await page.locator('.part.panel.bottom').isVisible()) await page.keyboard.press('Control+J');
        await page.keyboard.press('Escape');
        await sleep(500);
        mkdirSync(artifactsDir, { recursive: true });
        await page.screenshot({ path: join(artifactsDir, 'pairing-panel.png') });
        await frame.locator('#reveal').click();
        await frame.locator('#payload', { hasText: pairing.token }).waitFor();
        assert((await frame.locator('#payload').textContent()) === clip, 'revealed payload differs from the clipboard');
        const link = await frame.locator('#link').textContent();
        assert(link === `${pairing.url}/#token=${pairing.token}`, `web client link ${link}`);

        log('UI:   the pairing panel offers the phone the provider switch');
        const canSwitch = async () =>
          ((await (await fetch(`${pairing.url}/v1/providers`, { headers: { authorization: `Bearer ${pairing.token}` } })).json()) as { canSwitch: boolean }).canSwitch;
        assert((await canSwitch()) === false, 'the phone may switch before the user allowed it');
        const phoneSwitch = frame.locator('#phone-switch');
        assert(!(await phoneSwitch.isChecked()), 'the switch starts on');
        await phoneSwitch.check();
        await waitUntil('the relay to allow a switch from the phone', canSwitch, 10_000);
        await phoneSwitch.uncheck();
        await waitUntil('the relay to refuse a switch from the phone again', async () => !(await canSwitch()), 10_000);
        // The link opens the relay's own web client (served at /, token only in the fragment).
        const page2 = await fetch(`${pairing.url}/`);
        assert(page2.status === 200 && (page2.headers.get('content-type') ?? '').startsWith('text/html'), `GET / gave ${page2.status}`);

        log('UI:   closing the window deactivates the extension');
        await page.close();
        await waitUntil('the token file to be removed after the window closed', () => !existsSync(join(configDir, 'token')), 30_000);
        await waitUntil('the relay port to close', async () => !(await portOpen(port)), 10_000);
      } finally {
        await ollama.close();
      }
    },
  },
  {
    title: 'status bar menu, Select Provider quick pick, API key password box, port change restart, missing cloudflared, LAN warning',
    async run({ page, open, settings, rememberSecret, configDir, log }) {
      const ollama = await startOllamaStandIn();
      const openai = await startOpenAiStandIn();
      const port = await freePort();
      try {
        settings({
          'deskrelay.port': port,
          'deskrelay.providers': [
            { id: 'ollama-ui', kind: 'ollama', baseUrl: ollama.url, model: 'auto' },
            { id: 'openai-ui', kind: 'openai-compatible', baseUrl: openai.url, model: 'gpt-ui' },
          ],
          'deskrelay.activeProvider': 'ollama-ui',
          'deskrelay.allowPhoneProviderSwitch': true,
        });
        await open();
        const statusItem = page.locator('.statusbar-item', { hasText: 'DeskRelay:' }).first();
        await statusItem.locator('text=stopped').waitFor({ timeout: 60_000 });

        log('UI:   status bar → Start Remote Chat');
        await statusItem.click();
        const rows = page.locator('.quick-input-list .monaco-list-row');
        await rows.filter({ hasText: 'Start Remote Chat' }).first().click();
        await page.locator('.statusbar-item', { hasText: `running on :${port}` }).first().waitFor({ timeout: 20_000 });
        await statusItem.click();
        await rows.filter({ hasText: 'Copy Pairing JSON' }).first().waitFor();
        const menu = await page.locator('.quick-input-list .monaco-list-row .label-name').allTextContents();
        assert(!menu.some((l) => l.includes('Start Remote Chat')), `status menu offers Start while running: ${menu.join(' | ')}`);
        await page.keyboard.press('Escape');

        log('UI:   Select Provider quick pick');
        await runCommand(page, 'DeskRelay: Select Provider');
        const active = rows.filter({ hasText: 'ollama-ui' }).first();
        await active.waitFor();
        assert((await active.locator('.codicon-check').count()) === 1, 'the active provider is not marked');
        await page.locator('.quick-input-widget input.input').fill('openai-ui');
        await page.keyboard.press('Enter');
        await page.locator('.statusbar-item', { hasText: 'openai-ui' }).first().waitFor({ timeout: 10_000 });

        log('UI:   Set Provider API Key (password input box)');
        const key = `sk-ui-${Math.random().toString(36).slice(2)}`;
        rememberSecret(key);
        await runCommand(page, 'DeskRelay: Set Provider API Key');
        await rows.filter({ hasText: 'openai-ui' }).first().click();
        const input = page.locator('.quick-input-widget input.input');
        await page.locator('.quick-input-widget', { hasText: 'API key for "openai-ui"' }).waitFor();
        assert((await input.getAttribute('type')) === 'password', 'the API key box is not a password box');
        await input.fill(key);
        await page.keyboard.press('Enter');
        await notification(page, 'stored in VS Code');
        await hideNotificationCenter(page);
        const token = readFileSync(join(configDir, 'token'), 'utf8').trim();
        rememberSecret(token);
        const res = await fetch(`http://127.0.0.1:${port}/v1/chat/stream`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ messages: [{ role: 'user', content: 'key?' }] }),
        });
        assert(res.status === 200, `chat status ${res.status}`);
        assert((await res.text()).includes('"type":"done"'), 'the chat did not finish');
        assert(openai.requests.at(-1)?.headers.authorization === `Bearer ${key}`, 'the stand-in did not get the key from SecretStorage');
        assert(ollama.requests.every((r) => r.path !== '/api/chat'), 'the old provider got the chat');

        log('UI:   a switch from the phone (PUT /v1/providers/active) shows in the status bar and answers the next message');
        const phone = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
        const listed = await fetch(`http://127.0.0.1:${port}/v1/providers`, { headers: phone });
        const before = (await listed.json()) as { active: string; canSwitch: boolean };
        assert(before.active === 'openai-ui' && before.canSwitch === true, `GET /v1/providers: ${JSON.stringify(before)}`);
        const switched = await fetch(`http://127.0.0.1:${port}/v1/providers/active`, {
          method: 'PUT',
          headers: phone,
          body: JSON.stringify({ id: 'ollama-ui', model: 'llama3.2:latest' }),
        });
        const switchedBody = await switched.text();
        assert(switched.status === 200, `PUT /v1/providers/active gave ${switched.status}: ${switchedBody}`);
        assert(!switchedBody.includes(key), 'the providers answer holds the key');
        await page.locator('.statusbar-item', { hasText: 'ollama-ui' }).first().waitFor({ timeout: 10_000 });
        const next = await fetch(`http://127.0.0.1:${port}/v1/chat/stream`, {
          method: 'POST',
          headers: phone,
          body: JSON.stringify({ messages: [{ role: 'user', content: 'switched?' }] }),
        });
        assert((await next.text()).includes('"type":"done"'), 'the chat after the switch did not finish');
        const asked = ollama.requests.filter((r) => r.path === '/api/chat').at(-1);
        assert(asked?.body?.model === 'llama3.2:latest', `the switched provider was asked for ${String(asked?.body?.model)}`);

        log('UI:   changing deskrelay.port offers a restart');
        const newPort = await freePort();
        settings({ 'deskrelay.port': newPort });
        const toast = await notification(page, 'port or bind address changed');
        await toast.locator('.monaco-button', { hasText: 'Restart' }).first().click();
        await hideNotificationCenter(page);
        await page.locator('.statusbar-item', { hasText: `running on :${newPort}` }).first().waitFor({ timeout: 20_000 });
        assert(!(await portOpen(port)), 'the old port is still open');
        assert(readFileSync(join(configDir, 'token'), 'utf8').trim() !== token, 'a restart must make a new token');
        rememberSecret(readFileSync(join(configDir, 'token'), 'utf8').trim());
        await runCommand(page, 'DeskRelay: Stop Remote Chat');
        await statusItem.locator('text=stopped').waitFor({ timeout: 10_000 });

        log('UI:   Start Tunnel without cloudflared offers to install it');
        settings({ 'deskrelay.cloudflaredPath': '/nonexistent/cloudflared' });
        await sleep(500);
        await runCommand(page, 'DeskRelay: Start Remote Chat');
        await page.locator('.statusbar-item', { hasText: 'running on' }).first().waitFor({ timeout: 20_000 });
        await runCommand(page, 'DeskRelay: Start Tunnel');
        const missing = await notification(page, 'not found');
        await missing.locator('.monaco-button', { hasText: 'Install cloudflared' }).first().waitFor();
        await missing.locator('.monaco-button', { hasText: 'Set cloudflared Path' }).first().waitFor();
        await hideNotificationCenter(page);
        settings({ 'deskrelay.cloudflaredPath': '' });
        await runCommand(page, 'DeskRelay: Stop Remote Chat');
        await statusItem.locator('text=stopped').waitFor({ timeout: 10_000 });

        log('UI:   a non-loopback bind address warns once that LAN traffic is plain HTTP');
        settings({ 'deskrelay.bindAddress': '0.0.0.0' });
        await notification(page, 'plain HTTP');
        await hideNotificationCenter(page);
        settings({ 'deskrelay.bindAddress': '127.0.0.1' });
        await sleep(1000);
        settings({ 'deskrelay.bindAddress': '0.0.0.0' });
        await sleep(2000);
        await runCommand(page, 'Notifications: Show Notifications');
        await page.locator('.notifications-center').waitFor();
        const warnings = await page.locator('.notifications-center .monaco-list-row', { hasText: 'plain HTTP' }).count();
        assert(warnings === 1, `the LAN warning was shown ${warnings} times`);
        await hideNotificationCenter(page);
        settings({ 'deskrelay.bindAddress': '127.0.0.1' });
      } finally {
        await ollama.close();
        await openai.close();
      }
    },
  },
  {
    title: 'deskrelay.autoStart starts the relay when VS Code starts; closing the window stops it',
    async run({ page, open, settings, configDir }) {
      const port = await freePort();
      settings({ 'deskrelay.autoStart': true, 'deskrelay.port': port, 'deskrelay.bindAddress': '127.0.0.1' });
      try {
        await open();
        await page.locator('.statusbar-item', { hasText: `DeskRelay: running on :${port}` }).first().waitFor({ timeout: 60_000 });
        const health = await fetch(`http://127.0.0.1:${port}/v1/health`);
        assert(health.status === 200, `health ${health.status}`);
        assert(existsSync(join(configDir, 'token')), 'no token file while running');
        await page.close();
        await waitUntil('the token file to be removed after the window closed', () => !existsSync(join(configDir, 'token')), 30_000);
        await waitUntil('the relay port to close', async () => !(await portOpen(port)), 10_000);
      } finally {
        settings({ 'deskrelay.autoStart': false });
      }
    },
  },
  {
    title: 'walkthrough: Welcome lists it, its four steps show, and its first button starts the relay',
    async run({ page, open, settings, artifactsDir }) {
      const port = await freePort();
      settings({ 'deskrelay.port': port, 'deskrelay.bindAddress': '127.0.0.1', 'deskrelay.autoStart': false });
      await open();
      await runCommand(page, 'Welcome: Open Walkthrough');
      const input = page.locator('.quick-input-widget input.input');
      await input.fill('Chat from your phone');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Chat from your phone with DeskRelay' }).first().waitFor({ timeout: 20_000 });
      await page.keyboard.press('Enter');
      const walkthrough = page.locator('.gettingStartedContainer');
      for (const step of ['Start the relay', 'Pick a provider', 'Start the tunnel', 'Scan the QR code']) {
        await walkthrough.locator('.getting-started-step', { hasText: step }).first().waitFor({ timeout: 20_000 });
      }
      mkdirSync(artifactsDir, { recursive: true });
      await page.screenshot({ path: join(artifactsDir, 'walkthrough.png') });
      // The first step is open; its button runs DeskRelay: Start Remote Chat.
      await walkthrough.locator('.getting-started-step', { hasText: 'Start the relay' }).locator('a, button', { hasText: 'Start Remote Chat' }).first().click();
      await page.locator('.statusbar-item', { hasText: `DeskRelay: running on :${port}` }).first().waitFor({ timeout: 20_000 });
      await runCommand(page, 'DeskRelay: Stop Remote Chat');
      await waitUntil('the relay port to close', async () => !(await portOpen(port)), 10_000);
    },
  },
];

/** Used by the launcher: merges settings into a VS Code settings.json. */
export function mergeSettings(file: string, values: Record<string, unknown>): void {
  const current = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
  mkdirSync(dirname(file), { recursive: true });
  // Atomic (temp file + rename): VS Code's watcher must never read a half-written file.
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify({ ...current, ...values }, null, 2));
  renameSync(temp, file);
}
