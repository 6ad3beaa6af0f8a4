/**
 * The web client's device functions (web/src/devices.ts, issue 26) against a real relay. They
 * call same-origin paths as the page does; here each relative path is resolved against the
 * relay's URL, as the browser resolves it against the page's origin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type TestRelay } from '../helpers/relay';
import { claimDevice, CODE_MESSAGES, normalizeCode } from '../../web/src/claim';
import { defaultDeviceName } from '../../web/src/registration';
import { authMessage, DEVICE_REMOVED_MESSAGE, listDevices, PHONE_FORGOTTEN_MESSAGE, PHONE_REMOVED_MESSAGE, registerDevice, renameDevice, unpairDevice } from '../../web/src/devices';
import { AUTH_MESSAGE, fetchInfo } from '../../web/src/api';

let t: TestRelay;
const realFetch = globalThis.fetch;

beforeAll(async () => {
  t = await startRelay();
  globalThis.fetch = ((input: string, init?: RequestInit) => realFetch(new URL(input, t.url), init)) as typeof fetch;
});
afterAll(async () => {
  globalThis.fetch = realFetch;
  await t?.close();
});

describe('web client devices', () => {
  it('registers with the pairing token, lists itself as current, and unpairs itself; its token then fails with the removal message', async () => {
    const device = await registerDevice(t.token, 'iPhone Safari');
    expect(device?.token).toMatch(/^drd_/);
    const info = await fetchInfo(device!.token);
    expect(info.service).toBe('deskrelay');
    const listed = await listDevices(device!.token);
    expect(listed.find((d) => d.current)).toMatchObject({ id: device!.id, name: 'iPhone Safari', connected: true });
    await unpairDevice(device!.token, device!.id);
    // Unpairing again (the desktop already removed it) is not an error.
    await unpairDevice(device!.token, device!.id);
    await expect(listDevices(device!.token)).rejects.toMatchObject({ status: 401, message: PHONE_REMOVED_MESSAGE });
    expect(PHONE_REMOVED_MESSAGE).toBe('This phone was removed at the desk. To use it again, pair it again.');
    expect(DEVICE_REMOVED_MESSAGE).toBe('The desktop removed this device; scan the pairing code again.');
  });

  it('renames itself; a removed device\'s rename is the removal message, a relay without renaming is undefined', async () => {
    const device = (await registerDevice(t.token, 'Pixel Chrome'))!;
    expect(await renameDevice(device.token, device.id, 'Work phone')).toMatchObject({ id: device.id, name: 'Work phone', current: true });
    expect((await listDevices(t.token)).find((d) => d.id === device.id)?.name).toBe('Work phone');
    globalThis.fetch = ((input: string, init?: RequestInit) => realFetch(new URL(input.startsWith('/v1/devices/') ? '/v1/no-devices-here' : input, t.url), init)) as typeof fetch;
    try {
      expect(await renameDevice(device.token, device.id, 'x')).toBeUndefined();
    } finally {
      globalThis.fetch = ((input: string, init?: RequestInit) => realFetch(new URL(input, t.url), init)) as typeof fetch;
    }
    await unpairDevice(device.token, device.id);
    await expect(renameDevice(device.token, device.id, 'back')).rejects.toMatchObject({ status: 401, message: PHONE_REMOVED_MESSAGE });
  });

  it('a relay without devices (404) leaves the phone on the pairing token', async () => {
    globalThis.fetch = ((input: string, init?: RequestInit) => realFetch(new URL(input === '/v1/devices' ? '/v1/no-devices-here' : input, t.url), init)) as typeof fetch;
    try {
      expect(await registerDevice(t.token, 'Pixel Chrome')).toBeUndefined();
    } finally {
      globalThis.fetch = ((input: string, init?: RequestInit) => realFetch(new URL(input, t.url), init)) as typeof fetch;
    }
  });

  it('a stale pairing token is refused (401) rather than registered', async () => {
    await expect(registerDevice('dr_stale_token_from_before', 'x')).rejects.toMatchObject({ status: 401 });
  });

  it('words a 401 by its code and the token: removed at the desk, forgotten by a rotation, or a stale pairing link', () => {
    expect(authMessage('drd_abc', 'auth.device_removed')).toBe(PHONE_REMOVED_MESSAGE);
    expect(authMessage('drd_abc', 'auth.invalid_token')).toBe(PHONE_FORGOTTEN_MESSAGE);
    expect(authMessage('dr_abc', 'auth.invalid_token')).toBe(AUTH_MESSAGE);
    expect(AUTH_MESSAGE).toMatch(/restarted or its token was rotated/);
  });

  it('takes a pairing code in any case, with spaces or dashes; anything but 8 letters and digits is not sent', () => {
    expect(normalizeCode(' abcd-23ef ')).toBe('ABCD23EF');
    expect(normalizeCode('ab cd 23 ef')).toBe('ABCD23EF');
    expect(normalizeCode('ABCD23E')).toBeNull();
    expect(normalizeCode('ABCD23EF9')).toBeNull();
    expect(normalizeCode('ABCD*3EF')).toBeNull();
  });

  it('a wrong pairing code and too many tries are said in plain words (Retry-After in minutes or seconds)', async () => {
    await expect(claimDevice('WRONG234', 'Pixel Chrome')).rejects.toMatchObject({ status: 401, code: 'auth.invalid_code', message: CODE_MESSAGES.invalid });
    expect(CODE_MESSAGES.tooMany(42)).toBe('Too many wrong codes were tried. Wait 42 seconds, then try again.');
    expect(CODE_MESSAGES.tooMany(300)).toBe('Too many wrong codes were tried. Wait 5 minutes, then try again.');
  });

  it('names the phone from its user agent', () => {
    const cases: [string, string][] = [
      ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1', 'iPhone Safari'],
      ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1', 'iPhone Chrome'],
      ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1', 'iPad Safari'],
      ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36', 'Android Chrome'],
      ['Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36', 'Android Samsung Internet'],
      ['Mozilla/5.0 (Android 14; Mobile; rv:127.0) Gecko/127.0 Firefox/127.0', 'Android Firefox'],
      ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0', 'Windows Edge'],
      ['something else', 'Phone Browser'],
    ];
    for (const [ua, name] of cases) expect(defaultDeviceName(ua), ua).toBe(name);
  });
});
