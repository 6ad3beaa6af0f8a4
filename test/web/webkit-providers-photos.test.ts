/**
 * Issue 13 in WebKit (WebKitGTK's MiniBrowser over W3C WebDriver, as webkit.test.ts): the header
 * shows the provider and model that answer (no picker without the desktop's permission), and a
 * large photo picked in the page is downscaled to 1568 px, sent as an image and shown.
 */
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { type Desk, useWebKitSuite } from './harness';
import type { WebKit } from './webdriver';

let webkit: WebKit;
let desk: Desk;
useWebKitSuite({ mode: 'normal' }, (s) => ({ webkit, desk } = s));

function png(w: number, h: number): Buffer {
  const img = new PNG({ width: w, height: h });
  for (let i = 0; i < w * h; i++) {
    img.data[i * 4] = i & 255;
    img.data[i * 4 + 1] = (i >> 8) & 255;
    img.data[i * 4 + 2] = 128;
    img.data[i * 4 + 3] = 255;
  }
  return PNG.sync.write(img);
}

describe('WebKit: provider header and photos', () => {
  it('shows the provider and model; a 2400×1200 PNG goes downscaled to 1568 px and is shown', async () => {
    const s = await webkit.session();
    try {
      await s.setWindowRect({ width: 375, height: 812 });
      await s.go(webClientLink(desk.relay.url, desk.relay.token));
      await s.waitFor('#chat');
      await expect.poll(() => s.textOf('#model-name'), { timeout: 10_000 }).toBe('qwen3');
      expect(await s.exec<boolean>('return document.querySelector("#model-change").hidden;')).toBe(true);

      // What the file picker hands the page: a File on the input, then its change event.
      await s.exec(
        `const bytes = Uint8Array.from(atob(arguments[0]), (c) => c.charCodeAt(0));
         const dt = new DataTransfer();
         dt.items.add(new File([bytes], 'wide.png', { type: 'image/png' }));
         const input = document.querySelector('#photo-input');
         input.files = dt.files;
         input.dispatchEvent(new Event('change'));`,
        png(2400, 1200).toString('base64'),
      );
      await expect.poll(() => s.count('#thumbs img'), { timeout: 10_000 }).toBe(1);
      const box = await s.waitFor('form.compose textarea[name="message"]');
      await s.type(box, 'A photo from WebKit');
      await s.click(await s.waitFor('form.compose button[type="submit"]'));
      await expect.poll(() => s.count('.msg.assistant .reply[aria-busy="false"]'), { timeout: 10_000 }).toBe(1);
      const req = desk.ollama.requests.filter((r) => r.path === '/api/chat').at(-1)!;
      expect(req.images).toHaveLength(1);
      const size = await s.exec<number[]>(
        `const img = new Image(); img.src = 'data:image/jpeg;base64,' + arguments[0]; return img.decode().then(() => [img.naturalWidth, img.naturalHeight]);`,
        req.images[0].data,
      );
      expect(size).toEqual([1568, 784]);
      expect(await s.count('.msg.user .photos img')).toBe(1);
    } finally {
      await s.close();
    }
  }, 60_000);
});
