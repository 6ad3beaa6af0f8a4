import * as assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { api, configDir, freePort, getInfo, readToken, rememberSecret, setSetting, run } from './helpers';

const devicesFile = () => join(configDir(), 'devices.json');

interface DeviceStatus {
  running: boolean;
  devices: number;
  connectedDevices: number;
}

/** Registers a device with the pairing token in force, as the phone web client does. */
async function register(base: string, name: string): Promise<{ id: string; token: string }> {
  const res = await fetch(`${base}/v1/devices`, {
    method: 'POST',
    headers: { authorization: `Bearer ${readToken()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  assert.equal(res.status, 201);
  const device = (await res.json()) as { id: string; token: string };
  rememberSecret(device.token);
  return device;
}

describe('Paired devices in VS Code (issue 26)', function () {
  this.timeout(30_000);
  let base: string;

  before(async () => {
    await api();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await run('deskrelay.stop');
    await setSetting('port', port);
    await setSetting('rememberDevices', true);
    await run('deskrelay.start');
    rememberSecret(readToken()!);
    // Remembered devices from an earlier suite would be counted here.
    await run('deskrelay.forgetDevices', true);
  });

  after(async () => {
    await run('deskrelay.forgetDevices', true);
    await run('deskrelay.stop');
    for (const key of ['port', 'rememberDevices']) await setSetting(key, undefined);
  });

  it('a registered device is counted in the status (paired and connected) and kept as a 0600 hash file without its token', async () => {
    const phone = await register(base, 'iPhone Safari');
    assert.equal((await getInfo(base, phone.token)).status, 200);
    const s = (await api()).status() as unknown as DeviceStatus;
    assert.equal(s.devices, 1);
    assert.equal(s.connectedDevices, 1);
    assert.equal(statSync(devicesFile()).mode & 0o777, 0o600);
    const text = readFileSync(devicesFile(), 'utf8');
    assert.equal(text.includes(phone.token), false);
    assert.equal(text.includes('iPhone Safari'), true);
  });

  it('Manage Devices revokes a device: its token is refused at once', async () => {
    const tablet = await register(base, 'iPad Safari');
    assert.equal((await getInfo(base, tablet.token)).status, 200);
    const removed = await run<string>('deskrelay.manageDevices', tablet.id);
    assert.equal(removed, tablet.id);
    const after = await getInfo(base, tablet.token);
    assert.equal(after.status, 401);
    assert.equal(after.body.error.code, 'auth.device_removed');
    assert.equal(readFileSync(devicesFile(), 'utf8').includes(tablet.id), false);
  });

  it('Pair a Phone with a Code: the code pairs a phone once, with no token', async () => {
    const code = await run<string>('deskrelay.pairWithCode');
    assert.match(code, /^[2-9A-HJKMNP-Z]{8}$/);
    const claim = () =>
      fetch(`${base}/v1/devices/claim`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, name: 'Pixel Chrome' }) });
    const first = await claim();
    assert.equal(first.status, 201);
    const phone = (await first.json()) as { id: string; token: string };
    rememberSecret(phone.token);
    assert.equal((await getInfo(base, phone.token)).status, 200);
    assert.equal((await claim()).status, 401);
    await run('deskrelay.manageDevices', phone.id);
  });

  it('Rotate Token keeping devices: remembered devices still work with the new relay; forgetting them: they are refused', async () => {
    const phone = await register(base, 'Pixel Chrome');
    const oldToken = readToken();
    await run('deskrelay.rotateToken', false);
    assert.notEqual(readToken(), oldToken);
    rememberSecret(readToken()!);
    assert.equal((await getInfo(base, phone.token)).status, 200);
    await run('deskrelay.rotateToken', true);
    rememberSecret(readToken()!);
    assert.equal((await getInfo(base, phone.token)).status, 401);
    assert.equal(((await api()).status() as unknown as DeviceStatus).devices, 0);
  });

  it('Forget All Devices ends every device; with rememberDevices off a restart forgets them and deletes the file', async () => {
    const a = await register(base, 'A');
    assert.equal(await run<number>('deskrelay.forgetDevices', true), 1);
    assert.equal((await getInfo(base, a.token)).status, 401);
    const b = await register(base, 'B');
    await setSetting('rememberDevices', false);
    await run('deskrelay.stop');
    await run('deskrelay.start');
    rememberSecret(readToken()!);
    assert.equal((await getInfo(base, b.token)).status, 401);
    assert.equal(existsSync(devicesFile()), false);
  });
});
