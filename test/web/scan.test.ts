/**
 * "Scan the QR code" in the installed app (issue 36), in Chromium at 375 px: the camera is
 * Chromium's fake capture device playing a Y4M file of the desk's QR code (the web client link,
 * as the pairing panel shows it), so the page reads real camera frames. Debian's Chromium has no
 * BarcodeDetector on Linux, so this is the jsQR path (vendor/jsqr.js, fetched only now).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { PNG } from 'pngjs';
import QRCode from 'qrcode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import type { DeviceInfo } from '../../server/src/protocol';
import { CHROMIUM, SCREENSHOTS, startDesk, type Desk } from './harness';

let browser: Browser;
let desk: Desk;
let dir: string;

/** One frame of `png` as a Y4M video (grey: luma only), which Chromium's fake camera loops. */
function y4m(png: Buffer, size = 480): Buffer {
  const img = PNG.sync.read(png);
  const y = Buffer.alloc(size * size, 255);
  const ox = Math.floor((size - img.width) / 2);
  const oy = Math.floor((size - img.height) / 2);
  for (let r = 0; r < img.height; r++) {
    for (let c = 0; c < img.width; c++) {
      const i = (r * img.width + c) * 4;
      y[(r + oy) * size + c + ox] = Math.round(0.299 * img.data[i]! + 0.587 * img.data[i + 1]! + 0.114 * img.data[i + 2]!);
    }
  }
  const chroma = Buffer.alloc((size / 2) * (size / 2) * 2, 128);
  return Buffer.concat([Buffer.from(`YUV4MPEG2 W${size} H${size} F10:1 Ip A1:1 C420jpeg\nFRAME\n`), y, chroma]);
}

beforeAll(async () => {
  desk = await startDesk({ mode: 'normal' });
  dir = mkdtempSync(join(tmpdir(), 'deskrelay-scan-'));
  const qr = await QRCode.toBuffer(webClientLink(desk.relay.url, desk.relay.token), { type: 'png', margin: 4, scale: 5 });
  writeFileSync(join(dir, 'qr.y4m'), y4m(qr));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-video-capture=${join(dir, 'qr.y4m')}`],
  });
});
afterAll(async () => {
  await browser?.close();
  await desk?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('the app opened at / with no pairing scans the desk\'s QR code with the camera and pairs', async () => {
  const context = await browser.newContext({ viewport: { width: 375, height: 812 }, isMobile: true, hasTouch: true, userAgent: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Mobile Safari/537.36' });
  try {
    await context.grantPermissions(['camera'], { origin: desk.relay.url });
    const page = await context.newPage();
    const fetched: string[] = [];
    page.on('request', (r) => fetched.push(new URL(r.url()).pathname));
    await page.goto(`${desk.relay.url}/`);
    await page.locator('#pair').waitFor();
    expect(fetched).not.toContain('/vendor/jsqr.js');
    await page.getByRole('button', { name: 'Scan the QR code' }).click();
    await page.locator('#chat').waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('#conn').textContent()).toContain('Connected · ');
    await page.screenshot({ path: join(SCREENSHOTS, 'scanned.png') });
    expect(fetched).toContain('/vendor/jsqr.js');
    const res = await fetch(`${desk.relay.url}/v1/devices`, { headers: { Authorization: `Bearer ${desk.relay.token}` } });
    expect(((await res.json()) as DeviceInfo[]).filter((d) => d.hasKey)).toHaveLength(1);
    // The camera is off again.
    expect(await page.evaluate(() => (document.getElementById('scan-video') as HTMLVideoElement).srcObject)).toBeNull();
  } finally {
    await context.close();
  }
});
