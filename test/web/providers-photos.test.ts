/**
 * Issue 13 in the phone web client: the active provider and model at the top, the picker when the
 * desktop allows switching (the next message goes to the chosen stand-in), and photos: attached,
 * shown as thumbnails, downscaled on the phone to at most 1568 px on the long side, sent as image
 * parts, shown in the conversation and kept with the chat; the 9th photo is refused.
 */
import type { Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import type { ProviderConfig, ProviderSource } from '../../server/src/providers/types';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { closedPort } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { replyFinished, send, usePhoneSuite } from './harness';

const suite = usePhoneSuite({ mode: 'normal' });

/** A desktop with three providers whose switching the test turns on and off, as the CLI's config does. */
class Switchable implements ProviderSource {
  allow = false;
  activeName = 'local';
  constructor(readonly configs: ProviderConfig[]) {}
  active() {
    return { ok: true as const, config: this.configs.find((c) => c.id === this.activeName)! };
  }
  list() {
    return this.configs;
  }
  activeId() {
    return this.activeName;
  }
  canSwitch() {
    return this.allow;
  }
  async switchTo(id: string, model?: string) {
    this.activeName = id;
    if (model) this.configs.find((c) => c.id === id)!.model = model;
  }
}

let other: OllamaStandIn;
let relay: TestRelay;
let source: Switchable;

beforeAll(async () => {
  other = await startOllamaStandIn({ mode: 'normal', reply: ['Other here.'], models: ['llava:latest', 'gemma3:latest'] });
  const dead = await closedPort();
  source = new Switchable([
    { id: 'local', kind: 'ollama', baseUrl: suite.desk.ollama.url, model: 'qwen3' },
    { id: 'other', kind: 'ollama', baseUrl: other.url, model: 'auto' },
    { id: 'down', kind: 'ollama', baseUrl: `http://127.0.0.1:${dead}`, model: 'qwen3' },
    { id: 'deskrelay-cloud', kind: 'cloud' },
  ]);
  relay = await startRelay({ providers: source });
});
afterAll(async () => {
  await relay?.close();
  await other?.close();
});

async function open(): Promise<Page> {
  const { page, console } = await suite.openPhone();
  suite.cleanups.push(async () => expect(console.filter((l) => l.startsWith('pageerror'))).toEqual([]));
  await page.goto(webClientLink(relay.url, relay.token));
  await page.locator('#chat').waitFor();
  return page;
}

const chatCalls = (s: OllamaStandIn) => s.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/api/chat'));

/** A PNG of w×h with a gradient (so it is not trivially small). */
function png(w: number, h: number): Buffer {
  const img = new PNG({ width: w, height: h });
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4;
      img.data[i] = x & 255;
      img.data[i + 1] = y & 255;
      img.data[i + 2] = (x * y) & 255;
      img.data[i + 3] = 255;
    }
  }
  return PNG.sync.write(img);
}

/** A JPEG's or PNG's width and height, from its SOFn segment or IHDR. */
function imageSize(data: Buffer): { width: number; height: number; type: string } {
  if (data[0] === 0x89 && data.toString('ascii', 1, 4) === 'PNG') return { type: 'png', width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
  expect(data.readUInt16BE(0)).toBe(0xffd8);
  let i = 2;
  while (i < data.length) {
    const marker = data.readUInt16BE(i);
    const len = data.readUInt16BE(i + 2);
    if (marker >= 0xffc0 && marker <= 0xffcf && marker !== 0xffc4 && marker !== 0xffc8 && marker !== 0xffcc) {
      return { type: 'jpeg', height: data.readUInt16BE(i + 5), width: data.readUInt16BE(i + 7) };
    }
    i += 2 + len;
  }
  throw new Error('no SOF segment');
}

describe('provider and model at the top', () => {
  it('shows what answers; without permission there is no picker', async () => {
    source.allow = false;
    source.activeName = 'local';
    const page = await open();
    await expect.poll(() => page.locator('#model-name').textContent()).toBe('qwen3');
    expect(await page.locator('#model-bar').isVisible()).toBe(true);
    expect(await page.locator('#model-change').isVisible()).toBe(false);
    expect(await page.locator('#picker').isVisible()).toBe(false);
  });

  it('with switching allowed, picking another provider and model sends the next message there', async () => {
    source.allow = true;
    source.activeName = 'local';
    const page = await open();
    await expect.poll(() => page.locator('#model-name').textContent()).toBe('qwen3');
    await page.getByRole('button', { name: 'Change' }).click();
    // Only selectable providers are offered.
    await expect.poll(() => page.locator('#pick-provider option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(['local', 'other', 'down']);
    // A provider that cannot be reached: the relay's 502 message as it is.
    await page.locator('#pick-provider').selectOption('down');
    await expect.poll(() => page.locator('#picker-error').textContent()).toMatch(/127\.0\.0\.1/);
    await page.locator('#pick-provider').selectOption('other');
    await expect.poll(() => page.locator('#pick-model option').count()).toBe(3);
    expect(await page.locator('#picker-error').textContent()).toBe('');
    await page.locator('#pick-model').selectOption('gemma3:latest');
    await page.getByRole('button', { name: 'Use' }).click();
    await expect.poll(() => page.locator('#model-name').textContent()).toBe('gemma3:latest');
    expect(await page.locator('#picker').isVisible()).toBe(false);
    expect(source.activeName).toBe('other');

    const before = { local: chatCalls(suite.desk.ollama).length, other: chatCalls(other).length };
    await send(page, 'Who is there?');
    await replyFinished(page);
    expect(await page.locator('.msg.assistant .reply').last().textContent()).toContain('Other here.');
    expect(chatCalls(other).length).toBe(before.other + 1);
    expect(chatCalls(suite.desk.ollama).length).toBe(before.local);
    expect(chatCalls(other).at(-1)!.body.model).toBe('gemma3:latest');
  });
});

describe('photos', () => {
  it('a large PNG is downscaled to 1568 px, sent as an image with the text, shown, and kept with the chat', async () => {
    source.allow = false;
    source.activeName = 'local';
    const page = await open();
    await page.locator('#photo-input').setInputFiles({ name: 'big.png', mimeType: 'image/png', buffer: png(3000, 2000) });
    await expect.poll(() => page.locator('#thumbs img').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.locator('#thumbs').isVisible()).toBe(true);
    // Removable before sending.
    await page.getByRole('button', { name: 'Remove photo 1' }).click();
    expect(await page.locator('#thumbs img').count()).toBe(0);
    await page.locator('#photo-input').setInputFiles({ name: 'big.png', mimeType: 'image/png', buffer: png(3000, 2000) });
    await expect.poll(() => page.locator('#thumbs img').count(), { timeout: 10_000 }).toBe(1);

    const before = chatCalls(suite.desk.ollama).length;
    await send(page, 'What is in this photo?');
    await replyFinished(page);
    expect(chatCalls(suite.desk.ollama).length).toBe(before + 1);
    const req = chatCalls(suite.desk.ollama).at(-1)!;
    expect(req.images).toHaveLength(1);
    const size = imageSize(Buffer.from(req.images[0].data, 'base64'));
    expect(size).toEqual({ type: 'jpeg', width: 1568, height: 1045 });
    expect(req.body.messages.at(-1).content).toBe('What is in this photo?');
    // Thumbnails cleared; the photo in the conversation.
    expect(await page.locator('#thumbs img').count()).toBe(0);
    expect(await page.locator('.msg.user .photos img').count()).toBe(1);
    expect(await page.locator('.msg.user .photos img').first().getAttribute('src')).toMatch(/^data:image\/jpeg;base64,/);
    expect(await page.locator('.msg.user .photos img').first().evaluate((i) => (i as HTMLImageElement).naturalWidth)).toBe(1568);

    // Kept with the chat: back after a reload.
    await page.reload();
    await expect.poll(() => page.locator('.msg.user .photos img').count()).toBe(1);
    // And sent again as history with the next message.
    await send(page, 'And now?');
    await replyFinished(page);
    expect(chatCalls(suite.desk.ollama).at(-1)!.images).toHaveLength(1);
  });

  it('the 9th photo is refused with a message; a small PNG stays a PNG; a photo goes without words', async () => {
    const page = await open();
    const small = png(40, 30);
    await page.locator('#photo-input').setInputFiles(Array.from({ length: 9 }, (_, i) => ({ name: `p${i + 1}.png`, mimeType: 'image/png', buffer: small })));
    await expect.poll(() => page.locator('#attach-error').textContent(), { timeout: 10_000 }).toContain('At most 8 photos');
    expect(await page.locator('#thumbs img').count()).toBe(8);
    // Another one later is refused too.
    await page.locator('#photo-input').setInputFiles({ name: 'p10.png', mimeType: 'image/png', buffer: small });
    await expect.poll(() => page.locator('#attach-error').textContent()).toContain('At most 8 photos');
    expect(await page.locator('#thumbs img').count()).toBe(8);
    for (let i = 8; i > 1; i--) await page.getByRole('button', { name: `Remove photo ${i}` }).click();
    expect(await page.locator('#thumbs img').count()).toBe(1);

    const before = chatCalls(suite.desk.ollama).length;
    await page.getByRole('button', { name: 'Send' }).click();
    await replyFinished(page);
    expect(chatCalls(suite.desk.ollama).length).toBe(before + 1);
    const req = chatCalls(suite.desk.ollama).at(-1)!;
    expect(req.images).toHaveLength(1);
    expect(Buffer.from(req.images[0].data, 'base64').equals(small)).toBe(true);
  });

  it('counts photos as sent (base64): the one that would pass 10 MiB is refused before Send, and Send never meets a 413', async () => {
    const page = await open();
    // PNGs of noise just under 1 MiB are sent as they are (no downscale): 1.33 MiB each as base64.
    const noisy = Array.from({ length: 8 }, (_, i) => ({ name: `n${i + 1}.png`, mimeType: 'image/png', buffer: noisePng(540, 540, i) }));
    for (const f of noisy) expect(f.buffer.length).toBeLessThan(1024 * 1024);
    await page.locator('#photo-input').setInputFiles(noisy);
    await expect.poll(() => page.locator('#attach-error').textContent(), { timeout: 15_000 }).toContain('past the 10 MiB');
    expect(await page.locator('#thumbs img').count()).toBe(7);
    expect(await page.locator('#photo-budget').textContent()).toMatch(/^7 photos · (\d+(\.\d)?) of 9\.5 MB$/);
    const before = chatCalls(suite.desk.ollama).length;
    await send(page, 'Seven photos');
    await replyFinished(page, 15_000);
    expect(await page.locator('.msg.assistant.failed').count()).toBe(0);
    expect(chatCalls(suite.desk.ollama).length).toBe(before + 1);
    expect(chatCalls(suite.desk.ollama).at(-1)!.images).toHaveLength(7);
  });
});

/** A PNG that does not compress (random pixels), so its size is known in advance. */
function noisePng(width: number, height: number, seed: number): Buffer {
  const img = new PNG({ width, height });
  let x = 0x9e3779b9 ^ seed;
  for (let i = 0; i < img.data.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    img.data[i] = (i & 3) === 3 ? 255 : x & 255;
  }
  return PNG.sync.write(img);
}
