/**
 * Conversations kept on the desktop (issue 30) in WebKit (every iPhone browser): a chat made at
 * one relay address is listed, and opens with its reply, at another address of the same desktop
 * (127.0.0.1 and localhost: two origins, two separate storages), as after a quick tunnel's
 * restart or on a second phone.
 */
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import type { TestRelay } from '../helpers/relay';
import { phoneSession, useWebKitSuite } from './harness';
import { clickWhenReady, type Session, type WebKit } from './webdriver';

let webkit: WebKit;
let relay: TestRelay;

useWebKitSuite(
  { mode: 'normal', reply: ['Paris.'] },
  (s) => {
    webkit = s.webkit;
    relay = s.desk.relay;
  },
  { relay: { keepConversations: () => true } },
);

async function openAt(base: string): Promise<Session> {
  const s = await phoneSession(webkit);
  await s.go(webClientLink(base, relay.token));
  await s.waitFor('#chat');
  return s;
}

const click = clickWhenReady;

const titles = (s: Session) => s.exec<string[]>(`return [...document.querySelectorAll('#chat-list .chat-title')].map((e) => e.textContent);`);

describe('WebKit: chats kept on the desktop', () => {
  it('a chat made at one address is listed and opens with its reply at another', async () => {
    const a = await openAt(relay.url);
    const box = await a.waitFor('form.compose textarea[name="message"]');
    await a.type(box, 'What is the capital of France?');
    await click(a, 'form.compose button[type="submit"]');
    await expect
      .poll(async () => {
        const res = await fetch(`${relay.url}/v1/conversations`, { headers: { Authorization: `Bearer ${relay.token}` } });
        return ((await res.json()) as any).conversations.map((c: any) => c.preview);
      }, { timeout: 10_000 })
      .toEqual(['Paris.']);
    await a.close();

    const b = await openAt(relay.url.replace('127.0.0.1', 'localhost'));
    expect(new URL(await b.url()).hostname).toBe('localhost');
    await click(b, '#chats-open');
    await expect.poll(() => titles(b), { timeout: 10_000 }).toEqual(['What is the capital of France?']);
    await click(b, '#chat-list .chat-open');
    await expect.poll(() => b.exec<string[]>(`return [...document.querySelectorAll('.msg.assistant .reply')].map((e) => e.textContent.trim());`)).toEqual(['Paris.']);
    await b.close();
  });
});
