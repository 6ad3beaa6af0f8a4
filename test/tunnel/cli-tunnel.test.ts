/** `deskrelay serve --tunnel` as a user runs it, through the stand-in cloudflared (issue: tunnel helper). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSTALL_HELP } from '../../server/src/tunnel';
import { cliSuite, spawnCli } from '../helpers/cli';
import { isAlive, makeTls, readInfo, STANDIN, standinEnv, standinNames, type Tls } from './helpers';

const PRELOAD = path.resolve(__dirname, '../fixtures/cloudflared/edge-preload.cjs');
const PAYLOAD = /\{"url":"(https:\/\/[a-z0-9-]+\.trycloudflare\.com)","token":"(dr_[A-Za-z0-9_-]{43})"\}/;

let cert: Tls;
const dirs: string[] = [];

beforeAll(() => {
  cert = makeTls();
});
afterAll(() => cert.cleanup());
cliSuite(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function serveWithTunnel(mode: string, extraArgs: string[] = [], extraEnv: Record<string, string> = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-cli-tunnel-'));
  dirs.push(dir);
  const infoFile = path.join(dir, 'standin.json');
  const r = spawnCli(['serve', '--port', '0', '--tunnel', '--cloudflared', STANDIN, ...extraArgs], { ...standinEnv(cert, infoFile, mode, extraEnv), DESKRELAY_CONFIG_DIR: dir }, ['--require', PRELOAD]);
  return { ...r, infoFile, dir };
}

/** serve --tunnel with --cloudflared naming `missing`, no stand-in around. */
const missingCloudflared = (missing: string, dir: string) => spawnCli(['serve', '--port', '0', '--tunnel', '--cloudflared', missing], { PATH: process.env.PATH, DESKRELAY_CONFIG_DIR: dir });

describe('deskrelay serve --tunnel', () => {
  it('prints the local URL, then the tunnel URL, its pairing and QR once /v1/health answers through it; SIGTERM stops cloudflared', async () => {
    const run = serveWithTunnel('530', []);
    await expect.poll(() => run.stdout(), { timeout: 20_000 }).toMatch(PAYLOAD);
    const out = run.stdout();
    const [, url, token] = PAYLOAD.exec(out)!;
    // Order (issue 24): the local URL, then the tunnel; no loopback pairing a phone could not use
    // before it, and no --tunnel hint; then one QR code (the phone link), the link, the payload.
    const up = out.indexOf(`Tunnel up: ${url}`);
    expect(out.indexOf('listening on http://127.0.0.1:')).toBeLessThan(up);
    expect(out.slice(0, up)).not.toMatch(/"token"|[▀▄█]{5,}|#token=/);
    expect(out).not.toContain('--tunnel');
    const link = `${url}/#token=${token}`;
    expect(out.slice(up).search(/[▀▄█]{5,}/)).toBeGreaterThan(0);
    expect(up + out.slice(up).search(/[▀▄█]{5,}/)).toBeLessThan(out.indexOf(link));
    expect(out.indexOf(link)).toBeLessThan(out.indexOf(`{"url":"${url}"`));
    expect(out).toContain(`"token":"${token}"`);
    // The probe really went through the tunnel: the relay logged the health check.
    expect(run.stderr()).toMatch(/GET \/v1\/health 200/);
    expect(run.stderr()).not.toContain(token);
    const info = readInfo(run.infoFile);
    expect(info.argv).toContain('--no-autoupdate');
    expect(isAlive(info.pid)).toBe(true);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    await expect.poll(() => isAlive(info.pid), { timeout: 10_000 }).toBe(false);
  });

  // Issue 24: --tunnel without cloudflared stops early with the install line, not after two
  // QR codes a phone cannot use.
  it('stops at once, naming the path, when --cloudflared does not exist: no pairing printed, exit 1', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-cli-tunnel-'));
    dirs.push(dir);
    const missing = path.join(dir, 'no-such-cloudflared');
    const r = missingCloudflared(missing, dir);
    expect(await r.exited).toBe(1);
    expect(r.stderr()).toContain('Tunnel not started');
    expect(r.stderr()).toContain(missing);
    expect(r.stdout()).not.toMatch(/"token"|[▀▄█]{5,}/);
  });

  it('reports cloudflared dying after the tunnel was up, naming cloudflared', async () => {
    const run = serveWithTunnel('die-later', []);
    await expect.poll(() => run.stdout(), { timeout: 20_000 }).toMatch(PAYLOAD);
    await expect.poll(() => run.stdout(), { timeout: 10_000 }).toMatch(/Tunnel down: .*cloudflared/);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('--host 0.0.0.0: cloudflared still forwards to 127.0.0.1, not to the LAN address the relay prints', async () => {
    const run = serveWithTunnel('normal', ['--host', '0.0.0.0']);
    await expect.poll(() => run.stdout(), { timeout: 20_000 }).toMatch(PAYLOAD);
    const port = /listening on http:\/\/[^\s]+:(\d+)/.exec(run.stdout())![1];
    const argv = readInfo(run.infoFile).argv;
    expect(argv[argv.indexOf('--url') + 1]).toBe(`http://127.0.0.1:${port}`);
    // The probe went through the tunnel to the relay itself, which answered the tunnel's Host.
    expect(run.stderr()).toMatch(/GET \/v1\/health 200/);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it("cloudflared gets PATH, HOME, proxy and certificate variables from the CLI's environment, and no TUNNEL_* or provider key", async () => {
    const hostile = { TUNNEL_BASTION: 'true', TUNNEL_EDGE: 'evil.example:7844', TUNNEL_CACERT: '/tmp/evil.pem', OPENAI_API_KEY: 'sk-test-0123456789', ANTHROPIC_API_KEY: 'sk-ant-test' };
    const wanted = { HOME: '/home/deskrelay-cli-test', HTTPS_PROXY: 'http://proxy.test:3128', https_proxy: 'http://proxy.test:3128', NO_PROXY: 'localhost', SSL_CERT_FILE: '/etc/ssl/test.pem' };
    const run = serveWithTunnel('normal', [], { STANDIN_CLOUDFLARED_DUMP_ENV: '1', ...hostile, ...wanted });
    await expect.poll(() => run.stdout(), { timeout: 20_000 }).toMatch(PAYLOAD);
    const seen = readInfo(run.infoFile).env!;
    for (const name of Object.keys(hostile)) expect(seen, name).not.toHaveProperty(name);
    expect(seen).toMatchObject({ ...wanted, PATH: process.env.PATH });
    const allowed = new Set(['PATH', 'HOME', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'all_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR', ...standinNames(seen)]);
    expect(Object.keys(seen).filter((k) => !allowed.has(k))).toEqual([]);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('--cloudflared naming a missing file: names cloudflared, says the path was not found, gives the install steps', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-cli-tunnel-'));
    dirs.push(dir);
    const missing = path.join(dir, 'bin', 'cloudflared');
    const r = missingCloudflared(missing, dir);
    expect(await r.exited).toBe(1);
    const out = r.stderr();
    expect(out).toContain(INSTALL_HELP);
    expect(out).toContain(`Tunnel not started: cloudflared was not found at ${missing}`);
    expect(out).toMatch(/the path given by the cloudflared path you set \(deskrelay\.cloudflaredPath \/ --cloudflared\)/);
    expect(out).toContain('brew install cloudflared');
    expect(out).toContain('winget install --id Cloudflare.cloudflared');
  });
});
