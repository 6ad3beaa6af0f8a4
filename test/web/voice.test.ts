/**
 * Voice in the phone web client (issue 29), in Chromium with a fake microphone that plays a WAV
 * made here (`--use-file-for-fake-audio-capture`): the recording is uploaded to the relay's
 * transcription door and reaches the stand-in transcriber as the browser's webm/opus, the text
 * lands in the composer (or is sent at once), the browser's own recogniser is used (after its
 * one-time note) when the desktop has none, and the button is absent with neither. Replies are
 * read with speechSynthesis, stubbed in the page to record what it was given. Hands-free mode
 * runs a whole turn: listen, send at the pause, read the reply, listen again.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import type { ProviderConfig, ProviderSource, TranscriptionChoice } from '../../server/src/providers/types';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { startTranscriptionStandIn, toneWav, type TranscriptionStandIn } from '../fixtures/transcription/server';
import { startRelay, type TestRelay } from '../helpers/relay';
import { CHROMIUM, SCREENSHOTS, ensureVendor, openSettings, closeSettings, replyFinished, send } from './harness';

/** 1 s of tone, then 2.5 s of silence: the fake microphone loops it, so hands-free hears speech and then a pause. */
function speechThenSilence(): Buffer {
  const tone = toneWav(1);
  const silence = Buffer.alloc(16_000 * 2 * 2.5);
  const data = Buffer.concat([tone.subarray(44), silence]);
  const header = Buffer.from(tone.subarray(0, 44));
  header.writeUInt32LE(36 + data.length, 4);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

const REPLY = 'Here is **bold** text.\n\n```js\nconsole.log("code is not read");\n```\n\nDone.';

/** speechSynthesis as the page sees it, recording each utterance; `hold` keeps one "speaking" until cancel(). */
const FAKE_SPEECH = `
  window.__spoken = [];
  window.__cancels = 0;
  window.__hold = false;
  let queue = [];
  const fake = {
    speak(u) {
      window.__spoken.push(u.text);
      queue.push(u);
      if (!window.__hold) setTimeout(() => { queue = queue.filter((x) => x !== u); u.onend && u.onend(new Event('end')); }, 5);
    },
    cancel() {
      window.__cancels++;
      const q = queue; queue = [];
      for (const u of q) u.onerror && u.onerror(Object.assign(new Event('error'), { error: 'interrupted' }));
    },
    get speaking() { return queue.length > 0; },
    get pending() { return false; },
    getVoices() { return []; },
  };
  Object.defineProperty(window, 'speechSynthesis', { configurable: true, value: fake });`;

/** No browser recogniser (as in Firefox). */
const NO_RECOGNISER = `for (const name of ['SpeechRecognition', 'webkitSpeechRecognition']) Object.defineProperty(window, name, { configurable: true, value: undefined });`;

/** A browser recogniser that hears "Typed by the browser" a moment after start. */
const FAKE_RECOGNISER = `
  window.__recognitions = 0;
  class FakeRecognition extends EventTarget {
    start() {
      window.__recognitions++;
      setTimeout(() => {
        const e = new Event('result');
        e.resultIndex = 0;
        e.results = [Object.assign([{ transcript: 'Typed by the browser' }], { isFinal: true })];
        this.dispatchEvent(e);
        this.dispatchEvent(new Event('end'));
      }, 50);
    }
    stop() {}
    abort() { this.dispatchEvent(new Event('end')); }
  }
  Object.defineProperty(window, 'SpeechRecognition', { configurable: true, value: FakeRecognition });
  Object.defineProperty(window, 'webkitSpeechRecognition', { configurable: true, value: FakeRecognition });`;

let dir: string;
let browser: Browser;
let ollama: OllamaStandIn;
let stt: TranscriptionStandIn;
let relay: TestRelay;
let choice: TranscriptionChoice | undefined;
const pages: Page[] = [];

beforeAll(async () => {
  ensureVendor();
  mkdirSync(SCREENSHOTS, { recursive: true });
  dir = mkdtempSync(join(tmpdir(), 'deskrelay-voice-'));
  const wav = join(dir, 'speech.wav');
  writeFileSync(wav, speechThenSilence());
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
  // With thinking: the reply starts with a <think> section, which is never read aloud.
  ollama = await startOllamaStandIn({ mode: 'thinking', reply: [REPLY] });
  stt = await startTranscriptionStandIn();
  const providers: ProviderConfig[] = [
    { id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'qwen3' },
    { id: 'whisper', kind: 'openai-compatible', baseUrl: `${stt.url}/v1`, model: 'auto' },
  ];
  const source: ProviderSource = { active: () => ({ ok: true, config: providers[0] }), list: () => providers, transcription: () => choice };
  relay = await startRelay({ providers: source });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await relay?.close();
  await ollama?.close();
  await stt?.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const p of pages.splice(0)) await p.context().close();
  ollama.requests.length = 0;
  stt.received.length = 0;
});

async function open(init: string[] = []): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 375, height: 812 }, isMobile: true, hasTouch: true });
  await context.grantPermissions(['microphone'], { origin: relay.url });
  const page = await context.newPage();
  pages.push(page);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  for (const script of [FAKE_SPEECH, ...init]) await page.addInitScript(script);
  await page.goto(webClientLink(relay.url, relay.token));
  await page.locator('#chat').waitFor();
  return { page, errors };
}

const chats = () => ollama.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/api/chat'));
/** The recording panel's level meter moved with the fake microphone's tone (1 s of it in every 3.5 s). */
const meterMoved = (page: Page) =>
  expect
    .poll(() => page.locator('.mic-level').evaluate((e) => Number(/scaleX\(([\d.]+)\)/.exec((e as HTMLElement).style.transform)?.[1] ?? 0)), { timeout: 8000, interval: 50 })
    .toBeGreaterThan(0.05);
const mic = (page: Page) => page.getByRole('button', { name: 'Voice message' });
const box = (page: Page) => page.getByLabel('Message', { exact: true });

describe('dictation with the desktop transcriber', () => {
  it('records with a level meter and a timer, uploads on Done, and puts the text in the composer for a look', async () => {
    choice = { provider: 'whisper', model: 'whisper-large-v3' };
    const { page, errors } = await open();
    await mic(page).click();
    const panel = page.getByRole('group', { name: 'Recording' });
    await panel.waitFor();
    await expect.poll(() => page.getByRole('timer').textContent(), { timeout: 10_000 }).toBe('0:01');
    // The meter moves with the tone.
    await meterMoved(page);
    await page.screenshot({ path: join(SCREENSHOTS, 'voice-recording.png') });
    await page.getByRole('button', { name: 'Stop recording' }).click();
    await expect.poll(() => box(page).inputValue(), { timeout: 10_000 }).toBe('Hello from the microphone.');
    expect(await panel.isHidden()).toBe(true);
    expect(stt.received).toHaveLength(1);
    const got = stt.received[0];
    expect(got.problem).toBeUndefined();
    expect(got.file?.type).toBe('audio/webm;codecs=opus');
    expect(got.file?.filename).toBe('voice.webm');
    // A real WebM file (EBML header), from MediaRecorder.
    expect(got.file?.bytes.subarray(0, 4).toString('hex')).toBe('1a45dfa3');
    expect(got.file!.bytes.length).toBeGreaterThan(1000);
    expect(got.fields.model).toBe('whisper-large-v3');
    expect(chats()).toHaveLength(0);
    expect(errors).toEqual([]);
  });

  it('sends at once with "Send voice messages at once" on', async () => {
    choice = { provider: 'whisper', model: 'whisper-large-v3' };
    const { page } = await open();
    await openSettings(page);
    await page.getByLabel('Send voice messages at once').check();
    await closeSettings(page);
    await mic(page).click();
    await expect.poll(() => page.getByRole('timer').textContent(), { timeout: 10_000 }).not.toBe('0:00');
    // Stopped once the tone reaches the page (the meter moves), so the recording holds speech.
    await meterMoved(page);
    await page.getByRole('button', { name: 'Stop recording' }).click();
    await replyFinished(page);
    expect(chats()).toHaveLength(1);
    expect(chats()[0].body.messages.at(-1)).toMatchObject({ role: 'user', content: 'Hello from the microphone.' });
    expect(await box(page).inputValue()).toBe('');
  });

  it('"Send voice messages at once" ticked before the voice part of the app loaded is kept: the text is sent', async () => {
    choice = { provider: 'whisper', model: 'whisper-large-v3' };
    // The voice chunk held back until the box is ticked, as a slow phone (or a loaded machine) loads it late.
    let release!: () => void;
    const ticked = new Promise<void>((r) => (release = r));
    const context = await browser.newContext({ viewport: { width: 375, height: 812 }, isMobile: true, hasTouch: true });
    await context.grantPermissions(['microphone'], { origin: relay.url });
    const voiceChunk = /\/chunks\/voiceChat-[\w-]+\.js$/;
    await context.route(voiceChunk, async (route) => {
      await ticked;
      await route.continue();
      // Nothing else of the page goes through the test's routing.
      await context.unroute(voiceChunk);
    });
    const page = await context.newPage();
    pages.push(page);
    await page.addInitScript(FAKE_SPEECH);
    await page.goto(webClientLink(relay.url, relay.token));
    await page.locator('#chat').waitFor();
    await openSettings(page);
    await page.getByLabel('Send voice messages at once').check();
    await closeSettings(page);
    release();
    await mic(page).click();
    await meterMoved(page);
    await expect.poll(() => page.getByLabel('Send voice messages at once').isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Stop recording' }).click();
    await replyFinished(page).catch(async (err: Error) => {
      // What the page shows, for a failure under load: the box, the line under it, the requests.
      const box = await page.getByLabel('Message', { exact: true }).inputValue();
      const said = await page.locator('#attach-error').textContent();
      throw new Error(`${err.message}\nbox: ${JSON.stringify(box)}; under it: ${JSON.stringify(said)}; transcriptions: ${stt.received.length}; chats: ${chats().length}`);
    });
    expect(chats()).toHaveLength(1);
    expect(chats()[0].body.messages.at(-1)).toMatchObject({ role: 'user', content: 'Hello from the microphone.' });
    // And it was saved: a new page of the same phone has it ticked.
    const again = await context.newPage();
    pages.push(again);
    await again.goto(relay.url);
    await mic(again).waitFor();
    await openSettings(again);
    expect(await again.getByLabel('Send voice messages at once').isChecked()).toBe(true);
  });

  it('a recording that holds no sound says so, and nothing is uploaded or sent', async () => {
    choice = { provider: 'whisper', model: 'whisper-large-v3' };
    // A recorder that never hands over data: what stopping before the microphone's first sound gives.
    const { page, errors } = await open([
      `const add = MediaRecorder.prototype.addEventListener;
       MediaRecorder.prototype.addEventListener = function (type, ...rest) { if (type !== 'dataavailable') return add.call(this, type, ...rest); };`,
    ]);
    await openSettings(page);
    await page.getByLabel('Send voice messages at once').check();
    await closeSettings(page);
    await mic(page).click();
    // Stopped once the recorder runs (the timer moves), as the other tests do: under a loaded CI a
    // Stop at once after the tap once showed nothing within 10 s (the cause is not known).
    await expect.poll(() => page.getByRole('timer').textContent(), { timeout: 10_000 }).not.toBe('0:00');
    await page.getByRole('button', { name: 'Stop recording' }).click();
    await expect.poll(() => page.locator('#attach-error').textContent(), { timeout: 20_000 }).toBe('Nothing was recorded. Hold on a moment longer before you stop.');
    expect(stt.received).toHaveLength(0);
    expect(chats()).toHaveLength(0);
    expect(errors).toEqual([]);
  });

  it('Cancel drops the recording: nothing uploaded', async () => {
    choice = { provider: 'whisper', model: 'whisper-large-v3' };
    const { page } = await open();
    await mic(page).click();
    await page.getByRole('group', { name: 'Recording' }).waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('group', { name: 'Recording' }).waitFor({ state: 'hidden' });
    expect(stt.received).toHaveLength(0);
    expect(await box(page).inputValue()).toBe('');
  });
});

describe('without a desktop transcriber', () => {
  it("uses the browser's recogniser, saying once that the browser's maker hears the audio", async () => {
    choice = undefined;
    const { page } = await open([FAKE_RECOGNISER]);
    await mic(page).click();
    const note = page.locator('.mic-note');
    await expect.poll(() => note.textContent()).toContain("browser's maker");
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => box(page).inputValue()).toBe('Typed by the browser');
    await box(page).fill('');
    await mic(page).click();
    await expect.poll(() => box(page).inputValue()).toBe('Typed by the browser');
    expect(await note.isHidden()).toBe(true);
    expect(await page.evaluate(() => (window as unknown as { __recognitions: number }).__recognitions)).toBe(2);
    expect(stt.received).toHaveLength(0);
  });

  it('shows no microphone when neither the desktop nor the browser can hear', async () => {
    choice = undefined;
    const { page } = await open([NO_RECOGNISER]);
    await page.locator('#model-bar').waitFor();
    // Hidden buttons are out of the accessibility tree: found by their class, and not shown.
    expect(await page.locator('button.mic').count()).toBe(1);
    expect(await page.locator('button.mic').isHidden()).toBe(true);
    expect(await page.locator('button.talk').isHidden()).toBe(true);
    expect(await mic(page).count()).toBe(0);
  });
});

describe('hearing replies', () => {
  const spoken = (page: Page) => page.evaluate(() => (window as unknown as { __spoken: string[] }).__spoken);

  it('the speaker button reads the reply: Markdown as text, no code block, no thinking', async () => {
    choice = undefined;
    const { page } = await open();
    await send(page, 'hi');
    await replyFinished(page);
    await page.locator('.msg.assistant').last().getByRole('button', { name: 'Read aloud' }).click();
    await expect.poll(() => spoken(page)).toEqual(['Here is bold text.', 'Done.']);
  });

  it('reads every new reply with "Read replies aloud" on, and stops speaking when a new message is sent', async () => {
    choice = undefined;
    const { page } = await open();
    await openSettings(page);
    await page.getByLabel('Read replies aloud').check();
    await closeSettings(page);
    await page.evaluate(() => ((window as unknown as { __hold: boolean }).__hold = true));
    await send(page, 'first');
    await replyFinished(page);
    await expect.poll(() => spoken(page)).toEqual(['Here is bold text.', 'Done.']);
    const cancels = () => page.evaluate(() => (window as unknown as { __cancels: number }).__cancels);
    const before = await cancels();
    // The next reply takes a while: the reading stops on Send, not when the next reply comes.
    ollama.set({ mode: 'thinking', reply: [REPLY], headersDelayMs: 3000 });
    try {
      await send(page, 'second');
      await expect.poll(cancels).toBeGreaterThan(before);
      expect(await page.locator('.msg.assistant .reply[aria-busy="true"]').count()).toBe(1);
      await replyFinished(page);
    } finally {
      ollama.set({ mode: 'thinking', reply: [REPLY] });
    }
  });
});

describe('hands-free', () => {
  it('listens, sends at the pause, reads the reply, and listens again until tapped off', async () => {
    choice = { provider: 'whisper', model: 'whisper-large-v3' };
    const { page, errors } = await open();
    await page.getByRole('button', { name: 'Conversation mode' }).click();
    await expect.poll(() => chats().length, { timeout: 20_000 }).toBe(1);
    expect(chats()[0].body.messages.at(-1)).toMatchObject({ role: 'user', content: 'Hello from the microphone.' });
    await expect.poll(() => page.evaluate(() => (window as unknown as { __spoken: string[] }).__spoken), { timeout: 10_000 }).toEqual(['Here is bold text.', 'Done.']);
    // Listening again: the recorder is back.
    await page.getByRole('group', { name: 'Recording' }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(SCREENSHOTS, 'voice-hands-free.png') });
    await page.getByRole('button', { name: 'End conversation' }).click();
    await page.getByRole('group', { name: 'Recording' }).waitFor({ state: 'hidden' });
    expect(await page.getByRole('button', { name: 'End conversation' }).isHidden()).toBe(true);
    expect(errors).toEqual([]);
  }, 40_000);
});
