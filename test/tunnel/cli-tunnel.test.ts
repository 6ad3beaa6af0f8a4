/** `deskrelay serve --tunnel` as a user runs it, through the stand-in cloudflared (issue: tunnel helper). */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { INSTALL_HELP } from '../../server/src/tunnel';
import { isAlive, makeTls, readInfo, STANDIN, standinEnv, standinNames, type Tls } from './helpers';

const CLI = path.resolve(__dirname, '../../dist/cli.js');
const PRELOAD = path.resolve(__dirname, '../fixtures/cloudflared/edge-preload.cjs');
const PAYLOAD = /\{"url":"(https:\/\/[a-z0-9-]+\.trycloudflare\.com)","token":"(dr_[A-Za-z0-9_-]{43})"\}/;

let cert: Tls;
const children: ChildProcess[] = [];
const dirs: string[] = [];

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run "npm run build" first (npm test does)');
  cert = makeTls();
});
afterAll(() => cert.cleanup());
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function serveWithTunnel(mode: string, extraArgs: string[] = [], extraEnv: Record<string, string> = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-cli-tunnel-'));
  dirs.push(dir);
  const infoFile = path.join(dir, 'standin.json');
  const child = spawn(process.execPath, ['--require', PRELOAD, CLI, 'serve', '--port', '0', '--tunnel', '--cloudflared', STANDIN, ...extraArgs], {
    env: { ...standinEnv(cert, infoFile, mode, extraEnv), DESKRELAY_CONFIG_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, stdout: () => out, stderr: () => err, exited, infoFile, dir };
}

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
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--tunnel', '--cloudflared', missing], {
      env: { PATH: process.env.PATH, DESKRELAY_CONFIG_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(1);
    expect(err).toContain('Tunnel not started');
    expect(err).toContain(missing);
    expect(out).not.toMatch(/"token"|[▀▄█]{5,}/);
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
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--tunnel', '--cloudflared', missing], {
      env: { PATH: process.env.PATH, DESKRELAY_CONFIG_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
    expect(await new Promise<number | null>((r) => child.once('exit', r))).toBe(1);
    expect(out).toContain(INSTALL_HELP);
    expect(out).toContain(`Tunnel not started: cloudflared was not found at ${missing}`);
    expect(out).toMatch(/the path given by the cloudflared path you set \(deskrelay\.cloudflaredPath \/ --cloudflared\)/);
    expect(out).toContain('brew install cloudflared');
    expect(out).toContain('winget install --id Cloudflare.cloudflared');
  });
});
