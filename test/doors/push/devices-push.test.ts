/**
 * Issue 26 at the push door: a device's push subscriptions go when the device is removed, and
 * the push service stand-in (test/fixtures/push/standin.ts: the VAPID check and RFC 8291
 * decryption a browser's push service and browser do) sees no push for it afterwards, while
 * the desk's own subscription still gets one.
 */
import { describe, expect, it } from 'vitest';
import type { OllamaStandIn } from '../../fixtures/providers/ollama';
import type { PushStandIn } from '../../fixtures/push/standin';
import { pushRelayWithOllama, type PushRelay } from '../../fixtures/push/spawn';
import { bearer, send } from '../../helpers/http';
import { completeBlocks, newKey, parseNumbered, resumable } from '../helpers';

const SLOW = Array.from({ length: 8 }, (_, i) => `w${i} `);

let push: PushStandIn;
let ollama: OllamaStandIn;
let relay: PushRelay;

pushRelayWithOllama({ resumeTtlMs: 5_000 }, (s) => ({ push, ollama, relay } = s));

const json = (token: string) => ({ ...bearer(token), 'Content-Type': 'application/json' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A resumable reply its client leaves after the first event; resolves once the provider's reply is over. */
async function detachedReply(token: string): Promise<void> {
  ollama.set({ mode: 'normal', reply: SLOW, chunkDelayMs: 40 });
  const first = await resumable(relay.url, token, newKey(), { leaveAfter: 1 });
  expect(parseNumbered(completeBlocks(first.body)).length).toBeGreaterThanOrEqual(1);
  await ollama.lastRequestClosed;
}

describe('push and devices', () => {
  it('a device subscribes with its own token; removing the device drops its subscription, the desk\'s stays', async () => {
    const registered = await send(relay.url, '/v1/devices', { method: 'POST', headers: json(relay.token), body: '{"name":"iPhone Safari"}' });
    expect(registered.status).toBe(201);
    const device = registered.json as { id: string; token: string };
    const phone = push.subscribe();
    const desk = push.subscribe();
    expect((await send(relay.url, '/v1/push/subscriptions', { method: 'POST', headers: json(device.token), body: JSON.stringify(phone.json) })).status).toBe(201);
    expect((await send(relay.url, '/v1/push/subscriptions', { method: 'POST', headers: json(relay.token), body: JSON.stringify(desk.json) })).status).toBe(201);

    // Both are pushed to while the device is paired: the device's subscription works like any.
    await detachedReply(device.token);
    await expect.poll(() => push.received.filter((r) => r.id === phone.id).length, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => push.received.filter((r) => r.id === desk.id).length, { timeout: 10_000 }).toBe(1);
    expect(push.received.find((r) => r.id === phone.id)!.problems).toEqual([]);

    expect((await send(relay.url, `/v1/devices/${device.id}`, { method: 'DELETE', headers: bearer(relay.token) })).status).toBe(204);
    await detachedReply(relay.token);
    await expect.poll(() => push.received.filter((r) => r.id === desk.id).length, { timeout: 10_000 }).toBe(2);
    await sleep(400);
    expect(push.received.filter((r) => r.id === phone.id)).toHaveLength(1);
  }, 30_000);
});
