/**
 * How a presented token is matched (issue 26): against the pairing token and every device, with
 * no early exit, so the work done never depends on which device (if any) the token belongs to.
 * Timing itself is measured in bench/ (bench/devices.mjs), never asserted here.
 */
import { timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { admitToken } from '../../server/src/http/auth';
import { DeviceRegistry, matchDigest } from '../../server/src/store/devices';
import { silentLogger } from '../../server/src/logger';
import { newToken } from '../../server/src/session/token';

describe('matchDigest', () => {
  const records = Array.from({ length: 100 }, (_, i) => ({ id: i, digest: Buffer.alloc(32, i) }));
  const counting = () => {
    const calls: number[] = [];
    const equal = (a: Buffer, b: Buffer) => {
      calls.push(b[0]!);
      return timingSafeEqual(a, b);
    };
    return { calls, equal };
  };

  it.each([
    ['the first device', 0],
    ['the last device', 99],
    ['a device in the middle', 42],
    ['no device', 200],
  ])('compares with all 100 stored digests when the token is %s', (_what, which) => {
    const { calls, equal } = counting();
    const found = matchDigest(Buffer.alloc(32, which), records, equal);
    expect(found?.id).toBe(which < 100 ? which : undefined);
    expect(calls).toEqual(records.map((r) => r.id));
  });
});

describe('admitToken', () => {
  it('asks the devices for every token, the pairing token and malformed ones included, and compares the pairing token every time', async () => {
    const registry = DeviceRegistry.ephemeral(silentLogger);
    const { device, token } = await registry.register('Phone');
    const asked: string[] = [];
    const devices = { match: (t: string) => (asked.push(t), registry.match(t)) };
    const pairing = newToken();
    expect(admitToken(pairing, { pairing, devices })).toEqual({ device: undefined });
    expect(admitToken(token, { pairing, devices })).toEqual({ device: device.id });
    expect(() => admitToken('drd_wrong', { pairing, devices })).toThrow(/not registered/);
    expect(() => admitToken(undefined, { pairing, devices })).toThrow(/does not match/);
    expect(asked).toEqual([pairing, token, 'drd_wrong', '']);
  });

  it('a revoked device token no longer matches', async () => {
    const registry = DeviceRegistry.ephemeral(silentLogger);
    const { device, token } = await registry.register('Phone');
    expect(registry.match(token)).toBe(device.id);
    await registry.revoke(device.id);
    expect(registry.match(token)).toBeUndefined();
  });
});
