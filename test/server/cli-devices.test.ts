/** `deskrelay devices`, `deskrelay devices revoke ID`, serve's "Device paired" line and "rememberDevices" (issue 26), run as a user runs them: the built CLI in child processes. */
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliSuite, spawnCli } from '../helpers/cli';
import { bearer, send } from '../helpers/http';

cliSuite();

const run = (args: string[], dir: string) => spawnCli(args, { PATH: process.env.PATH, HOME: process.env.HOME, DESKRELAY_CONFIG_DIR: dir, DESKRELAY_RUNNER_PORTS: '' });

async function finished(args: string[], dir: string) {
  const r = run(args, dir);
  const code = await r.exited;
  return { code, stdout: r.stdout(), stderr: r.stderr() };
}

const PAIRING = /\{"url":"[^"]+","token":"dr_[^"]+"\}/;

async function serve(dir: string) {
  const r = run(['serve', '--port', '0'], dir);
  await expect.poll(() => r.stdout(), { timeout: 10_000 }).toMatch(PAIRING);
  const pairing = JSON.parse(PAIRING.exec(r.stdout())![0]) as { url: string; token: string };
  return { ...r, ...pairing, port: new URL(pairing.url).port };
}

async function register(url: string, token: string, name: string) {
  const reply = await send(url, '/v1/devices', { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify({ name }) });
  expect(reply.status).toBe(201);
  return reply.json as { id: string; token: string };
}

describe('deskrelay devices', () => {
  it('serve prints a line when a device pairs; devices lists it; devices revoke cuts it off; remembered devices outlive serve', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-devices-'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ rememberDevices: true }));
    const relay = await serve(dir);
    const phone = await register(relay.url, relay.token, 'iPhone Safari');
    const tablet = await register(relay.url, relay.token, 'iPad Safari');
    await expect.poll(() => relay.stdout()).toContain(`Device paired: iPhone Safari (${phone.id}). Remove it with: deskrelay devices revoke ${phone.id}`);
    // The request log names the device, never a token.
    expect((await send(relay.url, '/v1/remote/info', { headers: bearer(phone.token) })).status).toBe(200);
    await expect.poll(() => relay.stderr()).toContain(`GET /v1/remote/info 200`);
    expect(relay.stderr()).toMatch(new RegExp(`GET /v1/remote/info 200 \\d+ms device=${phone.id}`));
    expect(relay.stderr()).not.toContain(phone.token);

    const listed = await finished(['devices', '--port', relay.port], dir);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+LAST SEEN\s+CONNECTED\s+AGENT$/);
    expect(lines.find((l) => l.startsWith(phone.id))).toMatch(/iPhone Safari\s+just now\s+yes\s+no$/);
    expect(lines).toHaveLength(3);

    const removed = await finished(['devices', 'revoke', phone.id, '--port', relay.port], dir);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain(`Removed ${phone.id}`);
    expect((await send(relay.url, '/v1/remote/info', { headers: bearer(phone.token) })).status).toBe(401);
    const again = await finished(['devices', 'revoke', phone.id, '--port', relay.port], dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`deskrelay: No device "${phone.id}" is registered on the desktop (GET /v1/devices lists them).\n`);

    // The remembered file: hashes only, 0600; doctor checks its mode.
    const file = join(dir, 'devices.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).not.toContain(tablet.token);
    const doctor = await finished(['doctor', '--cloudflared', join(dir, 'none')], dir);
    expect(doctor.stdout).toContain(`[ok  ] devices file: ${file} has mode 600 (yours alone)`);
    chmodSync(file, 0o644);
    expect((await finished(['doctor', '--cloudflared', join(dir, 'none')], dir)).stdout).toContain(`[FAIL] devices file: ${file} has mode 644, readable by others; run: chmod 600 ${file}`);
    chmodSync(file, 0o600);

    relay.child.kill('SIGTERM');
    expect(await relay.exited).toBe(0);
    const offline = await finished(['devices'], dir);
    expect(offline.code).toBe(0);
    expect(offline.stdout).toMatch(/^DeskRelay is not running\.\nID\s+NAME/);
    expect(offline.stdout).toContain(tablet.id);
    expect(offline.stdout).not.toContain(phone.id);
    const offlineRevoke = await finished(['devices', 'revoke', tablet.id], dir);
    expect(offlineRevoke.code).toBe(1);
    expect(offlineRevoke.stderr).toMatch(/^deskrelay: DeskRelay is not running: start it/);

    // A restart keeps the tablet paired: its token works against the new relay.
    const restarted = await serve(dir);
    expect(restarted.token).not.toBe(relay.token);
    expect((await send(restarted.url, '/v1/remote/info', { headers: bearer(tablet.token) })).status).toBe(200);
  }, 30_000);

  it('without rememberDevices, devices die with serve and nothing is written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-devices-'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ rememberDevices: false }));
    const relay = await serve(dir);
    const phone = await register(relay.url, relay.token, 'Pixel Chrome');
    expect(existsSync(join(dir, 'devices.json'))).toBe(false);
    relay.child.kill('SIGTERM');
    await relay.exited;
    expect((await finished(['devices'], dir)).stdout).toBe('DeskRelay is not running.\nNo devices are remembered ("rememberDevices" is off, or none was paired).\n');
    const restarted = await serve(dir);
    expect((await send(restarted.url, '/v1/remote/info', { headers: bearer(phone.token) })).status).toBe(401);
  }, 30_000);

  it('deskrelay pair prints a one-time code a phone claims; devices allow/deny act as the desk; serve prints the agent request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-devices-'));
    const folder = mkdtempSync(join(tmpdir(), 'deskrelay-cli-agent-'));
    const r = run(['serve', '--port', '0', '--agent', folder], dir);
    await expect.poll(() => r.stdout(), { timeout: 10_000 }).toMatch(PAIRING);
    const relay = { ...r, ...(JSON.parse(PAIRING.exec(r.stdout())![0]) as { url: string; token: string }) };
    const port = new URL(relay.url).port;
    const paired = await finished(['pair', '--port', port], dir);
    expect(paired.code, paired.stderr).toBe(0);
    const code = /Pairing code: ([A-Z0-9]{8})\n/.exec(paired.stdout)![1];
    const claimed = await send(relay.url, '/v1/devices/claim', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code, name: 'Pixel Chrome' }) });
    expect(claimed.status, claimed.body).toBe(201);
    const phone = claimed.json as { id: string; token: string };

    const asked = await send(relay.url, '/v1/agent/folders', { headers: bearer(phone.token) });
    expect(asked.status).toBe(403);
    expect(asked.json.error.code).toBe('agent.device_not_allowed');
    expect(asked.json.error.message).toContain(`deskrelay devices allow ${phone.id}`);
    await expect.poll(() => relay.stdout()).toContain(`Pixel Chrome (${phone.id}) wants to use the agent in `);
    expect(relay.stdout()).toContain(`Allow: deskrelay devices allow ${phone.id}`);

    const allowed = await finished(['devices', 'allow', phone.id, '--port', port], dir);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain('may now use the agent');
    expect((await send(relay.url, '/v1/agent/folders', { headers: bearer(phone.token) })).status).toBe(200);
    expect((await finished(['devices', 'deny', phone.id, '--port', port], dir)).code).toBe(0);
    expect((await send(relay.url, '/v1/agent/folders', { headers: bearer(phone.token) })).json.error.code).toBe('agent.device_not_allowed');
    // The pairing token never reaches the agent.
    expect((await send(relay.url, '/v1/agent/folders', { headers: bearer(relay.token) })).json.error.code).toBe('agent.device_not_allowed');
    relay.child.kill('SIGTERM');
    await relay.exited;
  }, 30_000);

  it('says what is wrong in one line: a bad action, a missing id, a relay on another port, a bad "rememberDevices"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deskrelay-cli-devices-'));
    const bad = await finished(['devices', 'frob'], dir);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^deskrelay: unknown devices action "frob"/);
    const noId = await finished(['devices', 'revoke'], dir);
    expect(noId.stderr).toMatch(/needs the device id/);
    const relay = await serve(dir);
    const wrongPort = await finished(['devices', '--port', '1'], dir);
    expect(wrongPort.code).toBe(1);
    expect(wrongPort.stderr).toMatch(/nothing answers on 127\.0\.0\.1:1 .*pass --port/);
    relay.child.kill('SIGTERM');
    await relay.exited;
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ rememberDevices: 'yes' }));
    const badConfig = await finished(['serve', '--port', '0'], dir);
    expect(badConfig.code).toBe(1);
    expect(badConfig.stderr).toMatch(/"rememberDevices" must be true or false/);
  }, 30_000);
});
