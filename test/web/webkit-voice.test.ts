/**
 * Voice in WebKit (WebKitGTK's MiniBrowser over W3C WebDriver, as webkit.test.ts): the speaker
 * button reads the reply with speechSynthesis (stubbed in the page to record what it was given).
 * What the driver does not allow: a fake microphone (WebKitWebDriver has no fake media device
 * or permission switch, so recording is tested in Chromium only), and injecting a script before
 * the page's own (the stub is put in place after load, before the reply arrives). The test
 * records which of the voice APIs this WebKit has, and checks the microphone button follows it.
 */
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { type Desk, useWebKitSuite } from './harness';
import type { WebKit } from './webdriver';

let webkit: WebKit;
let desk: Desk;
useWebKitSuite({ mode: 'thinking', reply: ['Read **this**.\n\n```\nnot this\n```\n\nAnd this.'] }, (s) => ({ webkit, desk } = s));

const STUB = `
  window.__spoken = [];
  const fake = {
    speak(u) { window.__spoken.push(u.text); setTimeout(() => u.onend && u.onend(new Event('end')), 5); },
    cancel() {},
    getVoices() { return []; },
  };
  Object.defineProperty(window, 'speechSynthesis', { configurable: true, value: fake });
  if (typeof window.SpeechSynthesisUtterance === 'undefined') {
    window.SpeechSynthesisUtterance = class { constructor(text) { this.text = text; } };
  }`;

describe('WebKit: hearing replies', () => {
  it('the speaker button reads the reply without its code block and thinking; the microphone shows only with a recogniser', async () => {
    const s = await webkit.session();
    try {
      await s.setWindowRect({ width: 375, height: 812 });
      await s.go(webClientLink(desk.relay.url, desk.relay.token));
      await s.waitFor('#chat');
      const has = await s.exec<{ recogniser: boolean; recorder: boolean; synthesis: boolean }>(
        `return { recogniser: !!(window.SpeechRecognition || window.webkitSpeechRecognition), recorder: typeof MediaRecorder !== 'undefined' && !!(navigator.mediaDevices && navigator.mediaDevices.getUserMedia), synthesis: typeof speechSynthesis !== 'undefined' };`,
      );
      console.info(`WebKit voice APIs: ${JSON.stringify(has)}`);
      // The desk has no transcriber: the button is there only when the browser can recognise.
      expect(await s.exec<boolean>('return document.querySelector("button.mic").hidden;')).toBe(!has.recogniser);
      await s.exec(STUB);
      const box = await s.waitFor('form.compose textarea[name="message"]');
      await s.type(box, 'Say something');
      await s.click(await s.waitFor('form.compose button[type="submit"]'));
      await expect.poll(() => s.count('.msg.assistant .reply[aria-busy="false"]'), { timeout: 10_000 }).toBe(1);
      await s.click(await s.waitFor('.msg.assistant .msg-actions button.speak'));
      await expect.poll(() => s.exec<string[]>('return window.__spoken;')).toEqual(['Read this.', 'And this.']);
    } finally {
      await s.close();
    }
  }, 60_000);
});
