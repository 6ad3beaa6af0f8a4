/**
 * `deskrelay serve --tunnel <kind>` for the agents whose address lasts, as a user runs it, through
 * their stand-ins: start, the tunnel URL in the pairing, the probe through it, the agent dying,
 * stop (Tailscale: only our handler removed), the agent missing, and tokens kept out of argv and
 * output.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSuite, spawnCli, type CliRun } from '../helpers/cli';
import { closedPort } from '../helpers/http';
import { fakeTunnelToken, isAlive, makeTls, NAMED_HOSTNAME, NGROK_STANDIN, readInfo, startTailnet, STANDIN, TAILNET_HOST, TAILSCALE_STANDIN, type Tls } from './helpers';

const PRELOAD = path.resolve(__dirname, '../fixtures/cloudflared/edge-preload.cjs');
const payloadFor = (url: string) => new RegExp(`\\{"url":"${url.replace(/[.]/g, '\\.')}","token":"(dr_[A-Za-z0-9_-]{43})"\\}`);

let cert: Tls;
const dirs: string[] = [];
const closers: (() => void)[] = [];

beforeAll(() => {
  cert = makeTls();
});
afterAll(() => cert.cleanup());
cliSuite(() => {
  for (const c of closers.splice(0)) c();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** deskrelay serve with a tunnel; `infoFile` is where the stand-in's edge writes its TLS port (the preload reads it). */
function serve(args: string[], infoFile: string, own: Record<string, string>, extraEnv: Record<string, string> = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-cli-agents-'));
  dirs.push(dir);
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    DESKRELAY_CONFIG_DIR: dir,
    DESKRELAY_RUNNER_PORTS: '',
    STANDIN_CLOUDFLARED_INFO: infoFile,
    STANDIN_CLOUDFLARED_TLS_CERT: cert.certFile,
    ...own,
    DESKRELAY_TUNNEL_PASS_ENV: Object.keys(own).join(','),
    ...extraEnv,
  };
  return { ...spawnCli(['serve', '--port', '0', ...args], env, ['--require', PRELOAD]), dir };
}

/** The stand-in edge of a named tunnel whose dashboard routes NAMED_HOSTNAME to the relay's `port`. */
const namedEdge = (infoFile: string, port: string) => ({
  STANDIN_CLOUDFLARED_INFO: infoFile,
  STANDIN_CLOUDFLARED_TLS_KEY: cert.keyFile,
  STANDIN_CLOUDFLARED_TLS_CERT: cert.certFile,
  STANDIN_CLOUDFLARED_NAMED_HOSTNAME: NAMED_HOSTNAME,
  STANDIN_CLOUDFLARED_NAMED_SERVICE: `http://localhost:${port}`,
});

/** Waits for the pairing with `url`; when it does not come, the failure shows the CLI's stderr. */
async function pairsWith(run: CliRun, url: string, timeout = 20_000): Promise<void> {
  await expect.poll(() => run.stdout(), { timeout }).toMatch(payloadFor(url)).catch((err: Error) => {
    throw new Error(`${err.message}\nstderr: ${run.stderr()}`);
  });
}

/** serve --tunnel `kind` with --`program` naming a missing file: exit 1 at once with the install steps, no pairing printed. */
async function expectMissing(kind: string, program: string, installStep: string): Promise<void> {
  const run = serve(['--tunnel', kind, `--${program}`, `/nonexistent/${program}`], tmpFile('none'), {});
  expect(await run.exited).toBe(1);
  expect(run.stderr()).toContain(`Tunnel not started: ${program} was not found at /nonexistent/${program}`);
  expect(run.stderr()).toContain(installStep);
  expect(run.stdout()).not.toMatch(/"token"|[▀▄█]{5,}/);
}

const tmpFile = (name: string) => path.join(cert.dir, `${name}-${process.pid}-${Math.random().toString(36).slice(2)}.json`);

describe('deskrelay serve --tunnel cloudflare-named', () => {
  it('runs cloudflared tunnel run with the token in its environment only, pairs with https://<hostname>, says the address lasts', async () => {
    const infoFile = tmpFile('named');
    const token = fakeTunnelToken();
    // The dashboard routes the hostname to the relay's port: fixed here, as the user would. A port
    // just seen free (a random one could be an ephemeral port some other connection holds).
    const port = String(await closedPort());
    const own = { ...namedEdge(infoFile, port), STANDIN_CLOUDFLARED_DUMP_ENV: '1' };
    const run2 = serve(['--port', port, '--tunnel', 'cloudflare-named', '--hostname', NAMED_HOSTNAME, '--cloudflared', STANDIN], infoFile, own, { DESKRELAY_TUNNEL_TOKEN: token });
    const url = `https://${NAMED_HOSTNAME}`;
    await pairsWith(run2, url);
    expect(run2.stdout()).toContain(`Tunnel up: ${url}`);
    expect(run2.stdout()).toContain('This address lasts');
    expect(run2.stderr()).toMatch(/GET \/v1\/health 200/);
    const info = readInfo(infoFile);
    expect(info.argv.join(' ')).not.toContain(token);
    expect(info.env!.TUNNEL_TOKEN).toBe(token);
    expect(run2.stdout() + run2.stderr()).not.toContain(token);
    run2.child.kill('SIGTERM');
    expect(await run2.exited).toBe(0);
    await expect.poll(() => isAlive(info.pid), { timeout: 10_000 }).toBe(false);
  });

  it('the config file can name the tunnel and its hostname: serve starts it without --tunnel or --hostname', async () => {
    const infoFile = tmpFile('named-config');
    const token = fakeTunnelToken();
    const port = String(await closedPort());
    const own = namedEdge(infoFile, port);
    const config = tmpFile('config.json');
    writeFileSync(config, JSON.stringify({ tunnel: { kind: 'cloudflare-named', hostname: NAMED_HOSTNAME } }));
    const run = serve(['--port', port, '--config', config, '--cloudflared', STANDIN], infoFile, own, { DESKRELAY_TUNNEL_TOKEN: token });
    const url = `https://${NAMED_HOSTNAME}`;
    await pairsWith(run, url);
    expect(run.stdout()).toContain(`Tunnel up: ${url}`);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('without --hostname: a usage error naming it', async () => {
    const run = serve(['--tunnel', 'cloudflare-named'], tmpFile('none'), {});
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toMatch(/--tunnel cloudflare-named needs --hostname/);
  });
});

describe('deskrelay serve --tunnel ngrok', () => {
  const AUTHTOKEN = '2abcDEFghiJKLmnoPQRstu_3vwxYZ0123456789abcdEF';
  const own = (infoFile: string, mode = 'normal') => ({
    STANDIN_NGROK_INFO: infoFile,
    STANDIN_NGROK_TLS_KEY: cert.keyFile,
    STANDIN_NGROK_TLS_CERT: cert.certFile,
    STANDIN_NGROK_MODE: mode,
    STANDIN_NGROK_DIE_AFTER_MS: '1500',
  });

  it('pairs through the started tunnel URL; NGROK_AUTHTOKEN reaches ngrok on purpose, never the output; dying is reported', async () => {
    const infoFile = tmpFile('ngrok');
    const run = serve(['--tunnel', 'ngrok', '--ngrok', NGROK_STANDIN], infoFile, own(infoFile, 'die-later'), { NGROK_AUTHTOKEN: AUTHTOKEN });
    await expect.poll(() => run.stdout(), { timeout: 20_000 }).toMatch(/Tunnel up: https:\/\/[0-9a-f]{4}-203-0-113-7\.ngrok-free\.app/);
    const url = /Tunnel up: (\S+)/.exec(run.stdout())![1]!;
    await pairsWith(run, url, 10_000);
    expect((readInfo(infoFile) as unknown as { authtokenSource: string }).authtokenSource).toBe('env');
    await expect.poll(() => run.stdout(), { timeout: 10_000 }).toMatch(/Tunnel down: ngrok exited with code 2/);
    expect(run.stdout() + run.stderr()).not.toContain(AUTHTOKEN);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  // Issue 24: --tunnel without its program stops early with the install steps, rather than
  // serving on with a pairing a phone cannot use.
  it('--ngrok naming a missing file: stops at once with the install steps, printing no pairing', () => expectMissing('ngrok', 'ngrok', 'ngrok config add-authtoken'));
});

describe('deskrelay serve --tunnel tailscale-funnel / tailscale-serve', () => {
  const tailnet = (over: object = {}) => startTailnet(cert, tmpFile, closers, over);

  it("funnels the relay, pairs with the tailnet URL, and on SIGTERM removes only its handler", async () => {
    const theirs = { TCP: { '443': { HTTPS: true } }, Web: { [`${TAILNET_HOST}:443`]: { Handlers: { '/': { Proxy: 'http://127.0.0.1:3000' } } } }, AllowFunnel: { [`${TAILNET_HOST}:443`]: true } };
    const t = await tailnet({ serve: theirs });
    const run = serve(['--tunnel', 'tailscale-funnel', '--tailscale', TAILSCALE_STANDIN], t.infoFile, { STANDIN_TAILSCALE_STATE: t.stateFile });
    const url = `https://${TAILNET_HOST}:8443`;
    await pairsWith(run, url);
    expect(run.stdout()).toContain('This address lasts');
    expect(run.stderr()).toMatch(/GET \/v1\/health 200/);
    const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(run.stdout())![1];
    expect(t.state().calls).toContainEqual(['funnel', '--bg', '--https=8443', port]);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(t.state().calls).toContainEqual(['funnel', '--https=8443', 'off']);
    expect(t.state().serve).toEqual(theirs);
  });

  it("relays tailscale's own message when tailscaled is not running, and keeps serving locally", async () => {
    const t = await tailnet({ daemon: false });
    const run = serve(['--tunnel', 'tailscale-serve', '--tailscale', TAILSCALE_STANDIN], t.infoFile, { STANDIN_TAILSCALE_STATE: t.stateFile });
    await expect.poll(() => run.stdout(), { timeout: 10_000 }).toMatch(/Tunnel not started: tailscale serve status failed[\s\S]*Failed to connect to local Tailscale daemon/);
    expect(run.child.exitCode).toBe(null);
    run.child.kill('SIGTERM');
  });

  it('--tailscale naming a missing file: stops at once with the install steps', () => expectMissing('tailscale-funnel', 'tailscale', 'Install Tailscale'));
});

describe('--tunnel parsing', () => {
  it('an unknown kind is a usage error listing the kinds', async () => {
    const run = serve(['--tunnel', 'frp'], tmpFile('none'), {});
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toMatch(/--tunnel must be one of cloudflare-quick, cloudflare-named, tailscale-funnel, tailscale-serve, ngrok, not "frp"/);
  });
});
