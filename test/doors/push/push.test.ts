/**
 * Push when the reply is ready (issue 15): Web Push from the desktop's own VAPID keys to a
 * stand-in push service over HTTPS (a throwaway CA the relay child trusts through
 * NODE_EXTRA_CA_CERTS). The stand-in checks the VAPID JWT and decrypts each payload with the
 * subscription's own private key, as the browser would.
 */
import { statSync, readFileSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { OllamaStandIn } from '../../fixtures/providers/ollama';
import { decryptAes128gcm, encryptAes128gcm, type BrowserSubscription, type PushStandIn } from '../../fixtures/push/standin';
import { pushRelayWithOllama, type PushRelay } from '../../fixtures/push/spawn';
import { bearer, send } from '../../helpers/http';
import { completeBlocks, newKey, parseNumbered, resumable } from '../helpers';
import { checkEndpoint, PUSH_SERVICES } from '../../../server/src/doors/push/endpoint';
import { loadVapidKeys, vapidPath } from '../../../server/src/doors/push/vapid';
import { parseSubscription, PUSH_KEY_PATH, PUSH_SUBSCRIPTIONS_PATH } from '../../../server/src/doors/push';
import { PATHS } from '../../../server/src/protocol';
import { createECDH, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { silentLogger } from '../../../server/src/logger';
import { closedPort } from '../../helpers/http';

const SLOW = Array.from({ length: 8 }, (_, i) => `w${i} `);
const RESUME_TTL_MS = 5_000;
/** Each push's whole deadline in the relay child (10 s in a real relay). */
const PUSH_TIMEOUT_MS = 2_000;

let push: PushStandIn;
let ollama: OllamaStandIn;
let relay: PushRelay;

pushRelayWithOllama({ resumeTtlMs: RESUME_TTL_MS, pushTimeoutMs: PUSH_TIMEOUT_MS }, (s) => ({ push, ollama, relay } = s));

const json = (token: string) => ({ ...bearer(token), 'Content-Type': 'application/json' });
const subscribe = (sub: { endpoint: string; keys?: unknown }, token = relay.token) =>
  send(relay.url, '/v1/push/subscriptions', { method: 'POST', headers: json(token), body: JSON.stringify(sub) });
const unsubscribe = (endpoint: string) => send(relay.url, '/v1/push/subscriptions', { method: 'DELETE', headers: json(relay.token), body: JSON.stringify({ endpoint }) });
const pushesTo = (id: string) => push.received.filter((r) => r.id === id);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A resumable reply the client leaves after its first event; resolves once the generation has ended (the provider's reply is over). */
async function detachedReply(mode: 'normal' | 'mid-stream-error' = 'normal'): Promise<string> {
  ollama.set({ mode, reply: SLOW, chunkDelayMs: 40 });
  const key = newKey();
  const first = await resumable(relay.url, relay.token, key, { leaveAfter: 1 });
  expect(parseNumbered(completeBlocks(first.body)).length).toBeGreaterThanOrEqual(1);
  await ollama.lastRequestClosed;
  return key;
}

/** Waits for `n` pushes to `id`, then a little longer to see that no more come. */
async function expectPushes(id: string, n: number) {
  await expect.poll(() => pushesTo(id).length, { timeout: 10_000 }).toBe(n);
  await sleep(400);
  expect(pushesTo(id)).toHaveLength(n);
  return pushesTo(id);
}

async function cleanSubscriptions(...subs: BrowserSubscription[]) {
  for (const s of subs) expect((await unsubscribe(s.json.endpoint)).status).toBe(204);
}

describe('the VAPID key', () => {
  it('GET /v1/push/key gives the public key only; the pair is kept in a 0600 file in the config dir', async () => {
    const reply = await send(relay.url, '/v1/push/key', { headers: bearer(relay.token) });
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.json)).toEqual(['publicKey']);
    const publicKey = Buffer.from(reply.json.publicKey, 'base64url');
    expect(publicKey).toHaveLength(65);
    expect(publicKey[0]).toBe(4);
    const file = vapidPath(relay.configDir);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored.publicKey).toBe(reply.json.publicKey);
    expect(reply.body).not.toContain(stored.privateKey);
    // Never logged either.
    expect(relay.log.join('\n')).not.toContain(stored.privateKey);
  });

  it('needs the token', async () => {
    expect((await send(relay.url, '/v1/push/key')).status).toBe(401);
    expect((await subscribe(push.subscribe().json, 'dr_wrong')).status).toBe(401);
  });
});

describe('subscriptions', () => {
  it('refuses an endpoint that is not https (400 request.invalid_body)', async () => {
    const sub = push.subscribe().json;
    const reply = await subscribe({ ...sub, endpoint: sub.endpoint.replace('https:', 'http:') });
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('request.invalid_body');
  });

  it('refuses an endpoint on a host that is not a known push service (400 push.endpoint_not_allowed)', async () => {
    const sub = push.subscribe().json;
    for (const endpoint of ['https://evil.example/push/x', 'https://127.0.0.1:1/push/x', 'https://fcm.googleapis.com.evil.example/fcm/send/x', 'https://notify.windows.com.evil.example/w']) {
      const reply = await subscribe({ ...sub, endpoint });
      expect(reply.status, endpoint).toBe(400);
      expect(reply.json.error.code).toBe('push.endpoint_not_allowed');
    }
  });

  it('refuses keys that are not a browser\'s (400 request.invalid_body)', async () => {
    const sub = push.subscribe().json;
    for (const keys of [undefined, {}, { ...sub.keys, p256dh: 'abc' }, { ...sub.keys, auth: Buffer.alloc(8).toString('base64url') }]) {
      const reply = await subscribe({ endpoint: sub.endpoint, keys });
      expect(reply.status).toBe(400);
      expect(reply.json.error.code).toBe('request.invalid_body');
    }
  });

  it('keeps at most 10: the 11th is refused (409 push.too_many_subscriptions), the same endpoint again is not a new one', async () => {
    const subs = Array.from({ length: 10 }, () => push.subscribe());
    for (const s of subs) expect((await subscribe(s.json)).status).toBe(201);
    const eleventh = await subscribe(push.subscribe().json);
    expect(eleventh.status).toBe(409);
    expect(eleventh.json.error.code).toBe('push.too_many_subscriptions');
    expect((await subscribe(subs[3]!.json)).status).toBe(201);
    await cleanSubscriptions(...subs);
    // Posted all at once, still only 10.
    const burst = await Promise.all(Array.from({ length: 14 }, () => subscribe(push.subscribe().json)));
    expect(burst.filter((r) => r.status === 201)).toHaveLength(10);
    expect(burst.filter((r) => r.status === 409)).toHaveLength(4);
    for (const r of burst.filter((b) => b.status === 201)) expect((await unsubscribe(r.json.endpoint)).status).toBe(204);
    expect((await subscribe(push.subscribe().json)).status).toBe(201);
    // The last one is left to the restart test, which sees it go.
  });
});

describe('a push when a reply ends with nobody connected', () => {
  it('arrives exactly once, VAPID-signed for the endpoint\'s origin, with only the key and ok in the encrypted payload', async () => {
    const sub = push.subscribe();
    expect((await subscribe(sub.json)).status).toBe(201);
    const key = await detachedReply();
    const [got] = await expectPushes(sub.id, 1);
    expect(got!.problems).toEqual([]);
    expect(got!.payload).toEqual({ type: 'reply_ready', idempotencyKey: key, ok: true });
    expect(got!.headers.urgency).toBe('normal');
    expect(got!.headers.ttl).toBe(String(RESUME_TTL_MS / 1000));
    expect(got!.claims!.aud).toBe(push.origin);
    const { json: keyReply } = await send(relay.url, '/v1/push/key', { headers: bearer(relay.token) });
    expect(got!.vapidKey).toBe(keyReply.publicKey);
    // Nothing of the conversation or the pairing travels, not even encrypted.
    const everything = JSON.stringify(got!.headers) + got!.plaintext + got!.body.toString('latin1');
    for (const secret of [relay.token, ...SLOW]) expect(everything).not.toContain(secret);
    // The reply is still there to resume.
    const resumed = await resumable(relay.url, relay.token, key);
    expect(parseNumbered(resumed.body).at(-1)!.event).toEqual({ type: 'done', content: SLOW.join('') });
    await cleanSubscriptions(sub);
  });

  it('says ok:false when the reply ended in an error', async () => {
    const sub = push.subscribe();
    await subscribe(sub.json);
    const key = await detachedReply('mid-stream-error');
    const [got] = await expectPushes(sub.id, 1);
    expect(got!.problems).toEqual([]);
    expect(got!.payload).toEqual({ type: 'reply_ready', idempotencyKey: key, ok: false });
    await cleanSubscriptions(sub);
  });

  it('is not sent while a client is connected to the reply', async () => {
    const sub = push.subscribe();
    await subscribe(sub.json);
    ollama.set({ mode: 'normal', reply: SLOW, chunkDelayMs: 20 });
    const reply = await resumable(relay.url, relay.token, newKey());
    expect(parseNumbered(reply.body).at(-1)!.event.type).toBe('done');
    await sleep(600);
    expect(pushesTo(sub.id)).toHaveLength(0);
    await cleanSubscriptions(sub);
  });

  it('is not sent for a reply the phone stopped (POST /v1/chat/cancel)', async () => {
    const sub = push.subscribe();
    await subscribe(sub.json);
    ollama.set({ mode: 'normal', reply: SLOW, chunkDelayMs: 100 });
    const key = newKey();
    await resumable(relay.url, relay.token, key, { leaveAfter: 1 });
    const cancel = await send(relay.url, '/v1/chat/cancel', { method: 'POST', headers: { ...bearer(relay.token), 'Idempotency-Key': key } });
    expect(cancel.json).toEqual({ cancelled: true });
    await ollama.lastRequestClosed;
    await sleep(600);
    expect(pushesTo(sub.id)).toHaveLength(0);
    await cleanSubscriptions(sub);
  });

  it('goes to every subscription; one the push service answers 404 or 410 for is removed', async () => {
    const [gone410, gone404, kept] = [push.subscribe(), push.subscribe(), push.subscribe()];
    for (const s of [gone410, gone404, kept]) expect((await subscribe(s.json)).status).toBe(201);
    push.answer(gone410.id, 410);
    push.answer(gone404.id, 404);
    await detachedReply();
    await expectPushes(kept.id, 1);
    await expectPushes(gone410.id, 1);
    await expectPushes(gone404.id, 1);
    await expect.poll(() => relay.log.filter((l) => l.includes('subscription is gone')).length).toBeGreaterThanOrEqual(2);
    await detachedReply();
    await expectPushes(kept.id, 2);
    expect(pushesTo(gone410.id)).toHaveLength(1);
    expect(pushesTo(gone404.id)).toHaveLength(1);
    // The log names the host only, never the endpoint (a capability URL).
    expect(relay.log.join('\n')).not.toContain(gone410.id);
    await cleanSubscriptions(kept);
  });

  it('a push service that drips one byte at a time: each push ends at its deadline, and at most 16 are in flight', async () => {
    // A new token: no subscriptions left by the tests before, so all ten fit.
    await relay.restart();
    const drips = Array.from({ length: 10 }, () => push.subscribe());
    for (const s of drips) {
      expect((await subscribe(s.json)).status).toBe(201);
      // Well inside any idle timeout: only a deadline for the whole push ends it.
      push.drip(s.id, 200);
    }
    push.resetMostOpen();
    const logBefore = relay.log.length;
    const started = Date.now();
    // Three replies end with nobody connected: 30 pushes, each held open by the service.
    for (let i = 0; i < 3; i++) await detachedReply();
    await expect.poll(() => relay.log.slice(logBefore).filter((l) => l.includes(`no answer within ${PUSH_TIMEOUT_MS} ms`)).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(16);
    await expect.poll(() => push.openConnections, { timeout: PUSH_TIMEOUT_MS + 3_000 }).toBe(0);
    const lasted = Date.now() - started;
    console.log(`push deadline: 30 pushes to a dripping service; at most ${push.mostOpenConnections} open at once; all closed after ${lasted} ms`);
    expect(push.mostOpenConnections).toBeLessThanOrEqual(16);
    // The ones past the cap are not sent, and the log says so.
    expect(relay.log.slice(logBefore).some((l) => /push: not sent to 127\.0\.0\.1:\d+: 16 pushes are already in flight/.test(l))).toBe(true);
    await cleanSubscriptions(...drips);
  }, 30_000);

  it('is not sent while the desktop has push turned off (and the key is refused: 403 push.disabled)', async () => {
    const sub = push.subscribe();
    await subscribe(sub.json);
    await relay.setPush(false);
    try {
      const key = await send(relay.url, '/v1/push/key', { headers: bearer(relay.token) });
      expect(key.status).toBe(403);
      expect(key.json.error.code).toBe('push.disabled');
      expect((await subscribe(push.subscribe().json)).json.error.code).toBe('push.disabled');
      await detachedReply();
      await sleep(600);
      expect(pushesTo(sub.id)).toHaveLength(0);
    } finally {
      await relay.setPush(true);
    }
    await cleanSubscriptions(sub);
  });
});

describe('a new token', () => {
  it('clears the subscriptions; the key pair stays', async () => {
    const sub = push.subscribe();
    expect((await subscribe(sub.json)).status).toBe(201);
    const before = (await send(relay.url, '/v1/push/key', { headers: bearer(relay.token) })).json.publicKey;
    const oldToken = relay.token;
    await relay.restart();
    expect(relay.token).not.toBe(oldToken);
    expect((await send(relay.url, '/v1/push/key', { headers: bearer(relay.token) })).json.publicKey).toBe(before);
    const all = push.received.length;
    await detachedReply();
    await sleep(800);
    expect(push.received.length).toBe(all);
    // Subscribing again works, and pushes come again.
    expect((await subscribe(sub.json)).status).toBe(201);
    await detachedReply();
    await expectPushes(sub.id, 1);
  });
});

describe('deskrelay serve (the built bundle, web-push loaded from dist/web-push.js)', () => {
  const CLI = resolve(__dirname, '../../../dist/cli.js');

  async function serve(config: Record<string, unknown>) {
    if (!existsSync(CLI) || !existsSync(resolve(__dirname, '../../../dist/web-push.js'))) throw new Error('dist/ is missing: run "npm run build" first (npm test does)');
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-push-cli-'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ activeProvider: 'local', providers: [{ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' }], ...config }));
    const port = await closedPort();
    const child = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: '', NODE_EXTRA_CA_CERTS: push.caFile, DESKRELAY_PUSH_HOSTS: push.host },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.resume();
    const exited = new Promise((r) => child.once('exit', r));
    await expect.poll(() => out, { timeout: 10_000 }).toMatch(/\{"url":"[^"]+","token":"dr_[^"]+"\}/);
    const pairing = JSON.parse(/\{"url":"[^"]+","token":"dr_[^"]+"\}/.exec(out)![0]) as { url: string; token: string };
    return {
      ...pairing,
      async close() {
        child.kill('SIGTERM');
        await exited;
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }

  it('pushes when a detached reply ends', async () => {
    const cli = await serve({});
    try {
      const sub = push.subscribe();
      const reply = await send(cli.url, '/v1/push/subscriptions', { method: 'POST', headers: json(cli.token), body: JSON.stringify(sub.json) });
      expect(reply.status).toBe(201);
      ollama.set({ mode: 'normal', reply: SLOW, chunkDelayMs: 40 });
      const key = newKey();
      await resumable(cli.url, cli.token, key, { leaveAfter: 1 });
      const [got] = await expectPushes(sub.id, 1);
      expect(got!.problems).toEqual([]);
      expect(got!.payload).toEqual({ type: 'reply_ready', idempotencyKey: key, ok: true });
    } finally {
      await cli.close();
    }
  });

  it('"pushNotifications": false in config.json turns it off', async () => {
    const cli = await serve({ pushNotifications: false });
    try {
      const reply = await send(cli.url, '/v1/push/key', { headers: bearer(cli.token) });
      expect(reply.status).toBe(403);
      expect(reply.json.error.code).toBe('push.disabled');
    } finally {
      await cli.close();
    }
  });
});

describe('pieces', () => {
  it('the door serves the paths of the shared protocol the web client is built from', () => {
    expect(PUSH_KEY_PATH).toBe(PATHS.pushKey);
    expect(PUSH_SUBSCRIPTIONS_PATH).toBe(PATHS.pushSubscriptions);
  });

  it('endpoint check: the browsers\' push services on 443 only; extra hosts only as given', () => {
    expect(PUSH_SERVICES).toEqual(['fcm.googleapis.com', 'updates.push.services.mozilla.com', 'web.push.apple.com', '*.notify.windows.com']);
    for (const ok of [
      'https://fcm.googleapis.com/fcm/send/abc:def',
      'https://updates.push.services.mozilla.com/wpush/v2/gAAAA',
      'https://web.push.apple.com/QGx1',
      'https://wns2-par02p.notify.windows.com/w/?token=BQYAAA',
    ]) {
      expect(checkEndpoint(ok, []).href).toBe(ok);
    }
    for (const bad of ['https://fcm.googleapis.com:8443/x', 'https://notify.windows.com/w', 'https://user:pw@fcm.googleapis.com/x', 'http://fcm.googleapis.com/x', 'fcm.googleapis.com/x']) {
      expect(() => checkEndpoint(bad, []), bad).toThrow();
    }
    expect(checkEndpoint('https://127.0.0.1:4443/p', ['127.0.0.1:4443']).host).toBe('127.0.0.1:4443');
    expect(() => checkEndpoint('https://127.0.0.1:4444/p', ['127.0.0.1:4443'])).toThrow();
    expect(() => checkEndpoint('https://127.0.0.1/p', ['127.0.0.1:4443'])).toThrow();
  });

  it('subscription check: the keys a browser makes', () => {
    const ua = createECDH('prime256v1');
    const p256dh = ua.generateKeys().toString('base64url');
    const auth = randomBytes(16).toString('base64url');
    const target = parseSubscription({ endpoint: 'https://fcm.googleapis.com/fcm/send/x', expirationTime: null, keys: { p256dh, auth } }, []);
    expect(target.keys).toEqual({ p256dh, auth });
  });

  it('the stand-in decrypts what RFC 8291 encrypts', () => {
    const ua = createECDH('prime256v1');
    const pub = ua.generateKeys();
    const auth = randomBytes(16);
    expect(decryptAes128gcm(encryptAes128gcm('{"a":1}', pub, auth), ua.getPrivateKey(), pub, auth)).toBe('{"a":1}');
    expect(() => decryptAes128gcm(encryptAes128gcm('x', pub, randomBytes(16)), ua.getPrivateKey(), pub, auth)).toThrow();
  });

  it('key file: made once, 0600, reused, tightened when loosened, replaced when damaged; two relays at once share one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-vapid-'));
    try {
      const [a, b] = await Promise.all([loadVapidKeys(dir, silentLogger), loadVapidKeys(dir, silentLogger)]);
      expect(a).toEqual(b);
      expect(statSync(vapidPath(dir)).mode & 0o777).toBe(0o600);
      expect(await loadVapidKeys(dir, silentLogger)).toEqual(a);
      chmodSync(vapidPath(dir), 0o644);
      await loadVapidKeys(dir, silentLogger);
      expect(statSync(vapidPath(dir)).mode & 0o777).toBe(0o600);
      writeFileSync(vapidPath(dir), '{"publicKey":"x","privateKey":"y"}');
      const fresh = await loadVapidKeys(dir, silentLogger);
      expect(fresh.publicKey).not.toBe(a.publicKey);
      expect(statSync(vapidPath(dir)).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(vapidPath(dir), 'utf8'))).toEqual(fresh);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
