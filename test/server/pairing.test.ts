/**
 * Pairing that lasts (issue 36): devices remembered by default across restarts, a device's
 * public key (one key, one device), the desk's one-time pairing codes (expiry on an injected
 * clock, single use, 5 wrong tries, 10 failed claims a minute), removed devices told so, the list's
 * `current` / `hasKey` / `agent`, and who may remove whom.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, send } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { hold, newDeviceKey, registerDevice, registrationProof, within, type DeviceKey } from '../helpers/devices';
import { CODE_ALPHABET } from '../../server/src/store/claimCodes';
import { NodeWorkspace } from '../../server/src/agent';
import type { DeviceChange } from '../../server/src/store/devices';

const relays: TestRelay[] = [];
afterEach(async () => {
  for (const r of relays.splice(0)) await r.close();
});

async function relay(options: Parameters<typeof startRelay>[0] = {}): Promise<TestRelay> {
  const t = await startRelay(options);
  relays.push(t);
  return t;
}

/** Stops and starts the relay (port 0: a new port); the relay as it answers now. */
async function restart(t: TestRelay): Promise<{ url: string; token: string }> {
  await t.relay.stop();
  return t.relay.start();
}
const json = (token: string) => ({ ...bearer(token), 'Content-Type': 'application/json' });
const deskToken = (t: TestRelay) => readFileSync(join(t.dir, 'desk-token'), 'utf8').trim();
const newCode = (t: TestRelay, token = deskToken(t)) => send(t.url, '/v1/devices/codes', { method: 'POST', headers: bearer(token) });
const claim = (t: TestRelay, body: unknown) => send(t.url, '/v1/devices/claim', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const info = (t: { url: string }, token: string) => send(t.url, '/v1/remote/info', { headers: bearer(token) });
const list = (t: TestRelay, token: string) => send(t.url, '/v1/devices', { headers: bearer(token) });

describe('devices are remembered by default', () => {
  it('a relay started without the option keeps its devices across a restart, in a 0600 file of hashes and keys', async () => {
    const t = await relay();
    const device = await registerDevice(t);
    expect((await info(await restart(t), device.token)).status).toBe(200);
    const file = join(t.dir, 'devices.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(device.token);
    expect(JSON.parse(text).devices[0].publicKey).toEqual(device.key.jwk);
  });
});

describe('public keys', () => {
  it('GET /v1/devices shows hasKey, agent and the caller as current', async () => {
    const t = await relay();
    const keyed = await registerDevice(t, 'Keyed');
    const plain = await send(t.url, '/v1/devices', { method: 'POST', headers: json(t.token), body: JSON.stringify({ name: 'Plain' }) });
    expect(plain.status).toBe(201);
    const seen = (await list(t, keyed.token)).json as any[];
    expect(seen.map((d) => [d.name, d.hasKey, d.agent, d.current])).toEqual([
      ['Keyed', true, false, true],
      ['Plain', false, false, false],
    ]);
  });

  it('refuses a malformed key with 400 request.invalid_body', async () => {
    const t = await relay();
    const { jwk } = await newDeviceKey();
    const offCurve = { ...jwk, y: Buffer.alloc(32, 7).toString('base64url') };
    for (const publicKey of [{ ...jwk, kty: 'RSA' }, { ...jwk, crv: 'P-384' }, { ...jwk, x: jwk.x.slice(1) }, { ...jwk, x: `${jwk.x.slice(0, 42)}*` }, offCurve, 'key', null]) {
      const reply = await send(t.url, '/v1/devices', { method: 'POST', headers: json(t.token), body: JSON.stringify({ name: 'Phone', publicKey }) });
      expect(reply.status, JSON.stringify(publicKey)).toBe(400);
      expect(reply.json.error.code).toBe('request.invalid_body');
      expect(reply.json.error.message).toMatch(/publicKey/);
    }
    expect(t.relay.devices()).toEqual([]);
  });

  it('one key is one device: registering it again gives the same device a new token, and the old token and its streams stop', async () => {
    const t = await relay({ keepConversations: () => true });
    const first = await registerDevice(t, 'iPhone Safari');
    const feed = hold(t.url, '/v1/conversations/events', { headers: bearer(first.token) });
    expect(await feed.opened).toBe(200);
    const again = await registerDevice(t, 'Another name', first.key);
    expect(again.id).toBe(first.id);
    expect(again.token).not.toBe(first.token);
    expect(t.relay.devices().map((d) => d.name)).toEqual(['iPhone Safari']);
    expect((await info(t, first.token)).status).toBe(401);
    expect((await info(t, again.token)).status).toBe(200);
    expect(await within(feed.ended, 1_000)).toBe(true);
  });
});

describe('proof of possession: a leaked pairing token or code plus a device\'s public key takes nothing', () => {
  const register = (t: TestRelay, body: unknown) => send(t.url, '/v1/devices', { method: 'POST', headers: json(t.token), body: JSON.stringify(body) });

  /** The real phone, registered with its key and allowed the agent, holding a stream open. */
  async function victimPhone(t: TestRelay) {
    const key = await newDeviceKey();
    const body = { name: 'iPhone Safari', publicKey: key.jwk, proof: await registrationProof(key, 'iPhone Safari') };
    const first = await register(t, body);
    expect(first.status, first.body).toBe(201);
    const phone = { id: first.json.id as string, token: first.json.token as string, key, body };
    expect(await t.relay.allowAgent(phone.id, true)).toBe(true);
    const feed = hold(t.url, '/v1/conversations/events', { headers: bearer(phone.token) });
    expect(await feed.opened).toBe(200);
    return { ...phone, feed };
  }

  /** The phone's token still works, its stream was not ended, it is still the one device and still allowed the agent. */
  async function untouched(t: TestRelay, phone: Awaited<ReturnType<typeof victimPhone>>) {
    expect((await info(t, phone.token)).status).toBe(200);
    expect(await within(phone.feed.ended, 300)).toBe(false);
    expect(t.relay.devices()).toMatchObject([{ id: phone.id, name: 'iPhone Safari', agent: true }]);
    phone.feed.close();
  }

  const refused = (reply: { status: number; json: any }, code: string) => {
    expect(reply.status).toBe(403);
    expect(reply.json.error.code).toBe(code);
  };

  it('POST /v1/devices with the victim\'s public key and no proof is 403 device.proof_required; with a proof by another key, 403 device.bad_proof', async () => {
    const t = await relay({ keepConversations: () => true });
    const phone = await victimPhone(t);
    refused(await register(t, { name: 'Attacker', publicKey: phone.key.jwk }), 'device.proof_required');
    const other: DeviceKey = { ...(await newDeviceKey()), jwk: phone.key.jwk };
    refused(await register(t, { name: 'Attacker', publicKey: phone.key.jwk, proof: await registrationProof(other, 'Attacker') }), 'device.bad_proof');
    refused(await register(t, { name: 'Attacker', publicKey: phone.key.jwk, proof: { issuedAt: new Date().toISOString(), signature: 'A'.repeat(86) } }), 'device.bad_proof');
    await untouched(t, phone);
  });

  it('a replay of the phone\'s own earlier registration is 403 device.bad_proof', async () => {
    const t = await relay({ keepConversations: () => true });
    const phone = await victimPhone(t);
    refused(await register(t, phone.body), 'device.bad_proof');
    await untouched(t, phone);
  });

  it('a proof made 10 minutes ago (or 10 minutes ahead) is 403 device.bad_proof', async () => {
    const t = await relay({ keepConversations: () => true });
    const phone = await victimPhone(t);
    for (const ms of [-10 * 60_000, 10 * 60_000]) {
      const issuedAt = new Date(Date.now() + ms).toISOString();
      refused(await register(t, { name: 'iPhone Safari', publicKey: phone.key.jwk, proof: await registrationProof(phone.key, 'iPhone Safari', issuedAt) }), 'device.bad_proof');
    }
    await untouched(t, phone);
  });

  it('a proof over another name does not verify (403 device.bad_proof)', async () => {
    const t = await relay({ keepConversations: () => true });
    const phone = await victimPhone(t);
    refused(await register(t, { name: 'Attacker', publicKey: phone.key.jwk, proof: await registrationProof(phone.key, 'iPhone Safari') }), 'device.bad_proof');
    await untouched(t, phone);
  });

  it('the real phone pairing again with a fresh proof keeps its id and agent access, with a new token', async () => {
    const t = await relay({ keepConversations: () => true });
    const phone = await victimPhone(t);
    const again = await register(t, { name: 'iPhone Safari', publicKey: phone.key.jwk, proof: await registrationProof(phone.key, 'iPhone Safari') });
    expect(again.status, again.body).toBe(201);
    expect(again.json.id).toBe(phone.id);
    expect((await info(t, phone.token)).status).toBe(401);
    expect((await send(t.url, '/v1/devices', { headers: bearer(again.json.token) })).json).toMatchObject([{ id: phone.id, agent: true }]);
    expect(await within(phone.feed.ended, 1_000)).toBe(true);
  });

  it('a new key without a proof is 400 request.invalid_body naming "proof"; a key-less registration still works', async () => {
    const t = await relay();
    const reply = await register(t, { name: 'Phone', publicKey: (await newDeviceKey()).jwk });
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('request.invalid_body');
    expect(reply.json.error.message).toMatch(/"proof"/);
    for (const proof of ['x', { issuedAt: 'yesterday', signature: 'A'.repeat(86) }, { issuedAt: new Date().toISOString() }]) {
      const bad = await register(t, { name: 'Phone', publicKey: (await newDeviceKey()).jwk, proof });
      expect(bad.status, JSON.stringify(proof)).toBe(400);
      expect(bad.json.error.message).toMatch(/"proof"/);
    }
    expect(t.relay.devices()).toEqual([]);
    expect((await register(t, { name: 'Plain' })).status).toBe(201);
  });

  it('a claim with a wrong code learns nothing of the devices: a registered key with no proof, or a stolen proof, is 401 auth.invalid_code like any wrong code', async () => {
    const t = await relay({ keepConversations: () => true });
    const phone = await victimPhone(t);
    await newCode(t);
    for (const body of [{ name: 'Attacker', publicKey: phone.key.jwk }, phone.body, { name: 'Attacker', publicKey: (await newDeviceKey()).jwk }]) {
      const reply = await claim(t, { code: 'WRONG234', ...body });
      expect(reply.status, reply.body).toBe(401);
      expect(reply.json.error.code).toBe('auth.invalid_code');
    }
    await untouched(t, phone);
  });

  it('the same through POST /v1/devices/claim: no proof, a replay, a stale proof are refused and cost no code; the real phone with a fresh proof keeps its device', async () => {
    const t = await relay({ keepConversations: () => true });
    const phone = await victimPhone(t);
    const { code } = (await newCode(t)).json;
    refused(await claim(t, { code, name: 'Attacker', publicKey: phone.key.jwk }), 'device.proof_required');
    refused(await claim(t, { code, ...phone.body }), 'device.bad_proof');
    const stale = await registrationProof(phone.key, 'iPhone Safari', new Date(Date.now() - 10 * 60_000).toISOString());
    refused(await claim(t, { code, name: 'iPhone Safari', publicKey: phone.key.jwk, proof: stale }), 'device.bad_proof');
    const attacker: DeviceKey = { ...(await newDeviceKey()), jwk: phone.key.jwk };
    refused(await claim(t, { code, name: 'Attacker', publicKey: phone.key.jwk, proof: await registrationProof(attacker, 'Attacker') }), 'device.bad_proof');
    expect((await info(t, phone.token)).status).toBe(200);
    expect(await within(phone.feed.ended, 300)).toBe(false);
    const fresh = { name: 'iPhone Safari', publicKey: phone.key.jwk, proof: await registrationProof(phone.key, 'iPhone Safari') };
    const claimed = await claim(t, { code, ...fresh });
    expect(claimed.status, claimed.body).toBe(201);
    expect(claimed.json.id).toBe(phone.id);
    expect(t.relay.devices()).toMatchObject([{ id: phone.id, agent: true }]);
    // And that claim, captured, cannot be sent again with a new code.
    refused(await claim(t, { code: (await newCode(t)).json.code, ...fresh }), 'device.bad_proof');
  });
});

describe('removed devices', () => {
  it('a revoked token is 401 auth.device_removed, across a restart too; an unknown one stays auth.invalid_token', async () => {
    const t = await relay();
    const device = await registerDevice(t);
    expect((await send(t.url, `/v1/devices/${device.id}`, { method: 'DELETE', headers: bearer(t.token) })).status).toBe(204);
    const refused = await info(t, device.token);
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('auth.device_removed');
    expect(refused.json.error.message).toMatch(/This phone was removed at the desk/);
    const again = await restart(t);
    expect((await info(again, device.token)).json.error.code).toBe('auth.device_removed');
    const unknown = await info(again, `drd_${'A'.repeat(43)}`);
    expect(unknown.json.error.code).toBe('auth.invalid_token');
  });

  it('removing another device: the pairing token and a device with agent access may; another device is 403 device.forbidden', async () => {
    const t = await relay();
    const [a, b, c] = [await registerDevice(t, 'A'), await registerDevice(t, 'B'), await registerDevice(t, 'C')];
    const remove = (id: string, token: string) => send(t.url, `/v1/devices/${id}`, { method: 'DELETE', headers: bearer(token) });
    const refused = await remove(b.id, a.token);
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe('device.forbidden');
    expect(await t.relay.allowAgent(a.id, true)).toBe(true);
    expect((await remove(b.id, a.token)).status).toBe(204);
    expect((await remove(c.id, t.token)).status).toBe(204);
    expect(t.relay.devices().map((d) => d.name)).toEqual(['A']);
  });

  it('renaming: a device renames itself only', async () => {
    const t = await relay();
    const [a, b] = [await registerDevice(t, 'A'), await registerDevice(t, 'B')];
    const rename = (id: string, token: string) => send(t.url, `/v1/devices/${id}`, { method: 'PATCH', headers: json(token), body: JSON.stringify({ name: 'Work iPhone' }) });
    expect((await rename(b.id, a.token)).json.error.code).toBe('device.forbidden');
    const mine = await rename(a.id, a.token);
    expect(mine.status).toBe(200);
    expect(mine.json).toMatchObject({ id: a.id, name: 'Work iPhone', current: true, hasKey: true, agent: false });
  });
});

describe('pairing codes', () => {
  it('only the desk makes them: 8 characters of the unambiguous alphabet, for 5 minutes; the pairing token and a device token cannot', async () => {
    const t = await relay();
    const device = await registerDevice(t);
    for (const token of [t.token, device.token]) expect((await newCode(t, token)).status).toBe(401);
    const made = await newCode(t);
    expect(made.status).toBe(201);
    expect(made.json.code).toMatch(new RegExp(`^[${CODE_ALPHABET}]{8}$`));
    expect(CODE_ALPHABET).not.toMatch(/[01OIL]/);
    expect(Date.parse(made.json.expiresAt) - Date.now()).toBeGreaterThan(4 * 60_000);
  });

  it('a claim with the code and no token pairs the phone (201 {id, token}); the code works once', async () => {
    const t = await relay();
    const { code } = (await newCode(t)).json;
    const key = await newDeviceKey();
    const { jwk } = key;
    const claimed = await claim(t, { code: code.toLowerCase(), name: 'Pixel Chrome', publicKey: jwk, proof: await registrationProof(key, 'Pixel Chrome') });
    expect(claimed.status, claimed.body).toBe(201);
    expect(Object.keys(claimed.json).sort()).toEqual(['id', 'token']);
    expect((await info(t, claimed.json.token)).status).toBe(200);
    expect(t.relay.devices()).toMatchObject([{ id: claimed.json.id, name: 'Pixel Chrome', hasKey: true }]);
    const thief = await newDeviceKey();
    const again = await claim(t, { code, name: 'Thief', publicKey: thief.jwk, proof: await registrationProof(thief, 'Thief') });
    expect(again.status).toBe(401);
    expect(again.json.error.code).toBe('auth.invalid_code');
    // A bad body is a 400 and costs no try.
    expect((await claim(t, { name: 'No code' })).json.error.code).toBe('request.invalid_body');
  });

  it('expires after 5 minutes on the relay clock', async () => {
    let now = Date.parse('2026-11-28T12:00:00Z');
    const t = await relay({ clock: () => now });
    const { code } = (await newCode(t)).json;
    now += 5 * 60_000;
    const late = await claim(t, { code, name: 'Late' });
    expect(late.status).toBe(401);
    expect(late.json.error.code).toBe('auth.invalid_code');
  });

  it('dies after 5 wrong tries', async () => {
    const t = await relay();
    const { code } = (await newCode(t)).json;
    for (let i = 0; i < 5; i++) expect((await claim(t, { code: 'ZZZZZZZZ', name: 'Guess' })).status).toBe(401);
    expect((await claim(t, { code, name: 'Right but late' })).json.error.code).toBe('auth.invalid_code');
  });

  it('more than 10 failed claims a minute, from anywhere: 429 auth.too_many_attempts with Retry-After, even for the right code, until the minute passes', async () => {
    let now = Date.parse('2026-11-28T12:00:00Z');
    const t = await relay({ clock: () => now });
    for (let i = 0; i < 10; i++) expect((await claim(t, { code: 'ZZZZZZZZ', name: 'Guess' })).status).toBe(401);
    const { code } = (await newCode(t)).json;
    const limited = await claim(t, { code, name: 'Owner' });
    expect(limited.status).toBe(429);
    expect(limited.json.error.code).toBe('auth.too_many_attempts');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    now += 60_000;
    expect((await claim(t, { code, name: 'Owner' })).status).toBe(201);
  });
});

describe('agent access at the desk', () => {
  it('PUT /v1/devices/<id>/agent takes the desk token only; the answer and the list show it', async () => {
    const t = await relay();
    const device = await registerDevice(t);
    const put = (token: string, allowed: unknown) => send(t.url, `/v1/devices/${device.id}/agent`, { method: 'PUT', headers: json(token), body: JSON.stringify({ allowed }) });
    expect((await put(t.token, true)).status).toBe(401);
    expect((await put(device.token, true)).status).toBe(401);
    expect((await put(deskToken(t), 'yes')).status).toBe(400);
    const allowed = await put(deskToken(t), true);
    expect(allowed.status).toBe(200);
    expect(allowed.json).toMatchObject({ id: device.id, agent: true });
    expect((await list(t, device.token)).json[0].agent).toBe(true);
    // Remembered with the device.
    await restart(t);
    expect(t.relay.devices()[0]!.agent).toBe(true);
  });

  it('every /v1/agent path refuses the pairing token and a device not allowed (403 agent.device_not_allowed); the desk hears the first ask once; approvals "token" lets any token in', async () => {
    const changes: DeviceChange[] = [];
    let approvals: 'device' | 'token' = 'device';
    const workspace = new NodeWorkspace({ folder: __dirname, name: 'server-tests', configDir: '/nonexistent-config' });
    const t = await relay({ agent: { workspaces: () => [workspace], approvals: () => approvals }, onDeviceChange: (c) => changes.push(c) });
    const device = await registerDevice(t, 'iPhone Safari');
    const paths = [['GET', '/v1/agent/folders'], ['GET', '/v1/agent/files?q=a'], ['POST', '/v1/agent/sessions'], ['GET', '/v1/agent/sessions'], ['GET', '/v1/agent/sessions/x/events'], ['POST', '/v1/agent/sessions/x/approvals/c1']] as const;
    for (const token of [t.token, device.token]) {
      for (const [method, path] of paths) {
        const reply = await send(t.url, path, { method, headers: json(token), body: method === 'POST' ? '{"prompt":"x","decision":"allow"}' : undefined });
        expect(reply.status, path).toBe(403);
        expect(reply.json.error.code).toBe('agent.device_not_allowed');
        expect(reply.json.error.message).toMatch(/Manage Devices/);
      }
    }
    const asked = changes.filter((c) => c.type === 'agent-requested');
    expect(asked).toEqual([{ type: 'agent-requested', device: expect.objectContaining({ id: device.id, name: 'iPhone Safari' }), folders: ['server-tests'] }]);
    expect((await list(t, device.token)).json[0].agent).toBe('pending');
    await t.relay.allowAgent(device.id, true);
    expect((await send(t.url, '/v1/agent/folders', { headers: bearer(device.token) })).status).toBe(200);
    expect((await send(t.url, '/v1/agent/folders', { headers: bearer(t.token) })).status).toBe(403);
    approvals = 'token';
    expect((await send(t.url, '/v1/agent/folders', { headers: bearer(t.token) })).status).toBe(200);
  });
});
