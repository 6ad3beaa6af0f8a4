/**
 * How a presented token is matched (issue 26): against the pairing token and every device, with
 * no early exit, so the work done never depends on which device (if any) the token belongs to.
 * Timing itself is measured in bench/ (bench/devices.mjs), never asserted here.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { admitToken } from '../../server/src/http/admission';
import { DeviceRegistry, matchDigest } from '../../server/src/store/devices';
import { silentLogger } from '../../server/src/logger';
import { newToken } from '../../server/src/session/token';

describe('matchDigest', () => {
  const COUNT = 100;
  /** 100 digests end to end (8 words each, digest i all words i+1), with every element read counted. */
  const counted = () => {
    const flat = new Uint32Array(COUNT * 8);
    for (let i = 0; i < COUNT; i++) flat.fill(i + 1, i * 8, i * 8 + 8);
    const reads: number[] = [];
    const digests = new Proxy(flat, {
      get(target, key) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads.push(Number(key));
        return Reflect.get(target, key) as unknown;
      },
    });
    return { digests, reads };
  };
  const needle = (i: number) => new Uint32Array(8).fill(i + 1);

  it.each([
    ['the first device', 0],
    ['the last device', 99],
    ['a device in the middle', 42],
    ['no device', 200],
  ])('reads every word of all 100 stored digests, in the same order, when the token is %s', (_what, which) => {
    const { digests, reads } = counted();
    expect(matchDigest(needle(which), digests, COUNT)).toBe(which < COUNT ? which : -1);
    expect(reads).toEqual(Array.from({ length: COUNT * 8 }, (_, i) => i));
  });

  it('a digest differing only in its first or its last word does not match', () => {
    const { digests } = counted();
    for (const w of [0, 7]) {
      const near = needle(5);
      near[w] = 999;
      expect(matchDigest(near, digests, COUNT), `word ${w}`).toBe(-1);
    }
  });

  it('answers the first of two equal digests, and -1 with no devices', () => {
    const flat = new Uint32Array(16).fill(7);
    expect(matchDigest(new Uint32Array(8).fill(7), flat, 2)).toBe(0);
    expect(matchDigest(new Uint32Array(8).fill(7), new Uint32Array(0), 0)).toBe(-1);
  });
});

describe('admitToken', () => {
  it('asks the devices for every token, the pairing token and malformed ones included, and compares the pairing token every time', async () => {
    const registry = DeviceRegistry.ephemeral(silentLogger);
    const { device, token } = await registry.register('Phone');
    const hashed: string[] = [];
    const compared: Buffer[] = [];
    const devices = {
      digest: (t: string) => (hashed.push(t), registry.digest(t)),
      holderOf: (d: Buffer) => (compared.push(d), registry.holderOf(d)),
    };
    const pairing = newToken();
    expect(admitToken(pairing, { pairing, devices })).toEqual({ device: undefined });
    expect(admitToken(token, { pairing, devices })).toEqual({ device: device.id });
    expect(() => admitToken('drd_wrong', { pairing, devices })).toThrow(/not registered/);
    expect(() => admitToken(undefined, { pairing, devices })).toThrow(/does not match/);
    // The pairing token's digest once (then kept), and each presented token hashed once for both compares.
    expect(hashed).toEqual([pairing, pairing, token, 'drd_wrong', '']);
    expect(compared).toEqual([pairing, token, 'drd_wrong', ''].map((t) => registry.digest(t)));
    // A pairing token that changes is compared as the new one.
    const next = newToken();
    expect(() => admitToken(pairing, { pairing: next, devices })).toThrow(/does not match/);
    expect(admitToken(next, { pairing: next, devices })).toEqual({ device: undefined });
  });

  it('without devices, admits the pairing token only', () => {
    const pairing = newToken();
    expect(admitToken(pairing, pairing)).toEqual({ device: undefined });
    expect(() => admitToken(`${pairing}x`, pairing)).toThrow(/does not match/);
    expect(() => admitToken(pairing.slice(0, -1), { pairing })).toThrow(/does not match/);
  });

  it("hashes a token of any length or characters as SHA-256 of the file's salt and the token (what a remembered device's hash is)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-devtok-'));
    const salt = Buffer.alloc(32, 9);
    const file = join(dir, 'devices.json');
    writeFileSync(file, JSON.stringify({ version: 1, salt: salt.toString('base64url'), devices: [] }));
    const registry = await DeviceRegistry.remembered(file, silentLogger);
    const reference = (t: string) => createHash('sha256').update(salt).update(t, 'utf8').digest();
    // Short and long (past the registry's scratch room), 1 to 4 bytes of UTF-8 per character, empty.
    for (const t of ['drd_abc', 'x'.repeat(128), 'x'.repeat(129), 'é€😀'.repeat(20), 'é€😀'.repeat(60), '']) {
      expect(registry.digest(t).equals(reference(t)), `${t.length} chars`).toBe(true);
    }
    // What one call leaves behind does not change the next one.
    expect(registry.digest('ab').equals(reference('ab'))).toBe(true);
  });

  it('a revoked device token no longer matches', async () => {
    const registry = DeviceRegistry.ephemeral(silentLogger);
    const { device, token } = await registry.register('Phone');
    expect(registry.match(token)).toBe(device.id);
    await registry.revoke(device.id);
    expect(registry.match(token)).toBeUndefined();
  });
});
