/**
 * The agents whose address lasts (issue 17) against their stand-ins: the named Cloudflare tunnel,
 * Tailscale Funnel/Serve and ngrok. Start, URL discovery, the probe through the stand-in edge, the
 * agent dying, stop (Tailscale: removing only our handler), the agent missing, and where their
 * secrets go (the environment, never argv, never a message).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tunnelAgentFor, TunnelError, type Tunnel, type TunnelSettings } from '../../server/src/tunnel';
import { tailscaleTunnel } from '../../server/src/tunnel/tailscale';
import {
  EdgeAgent,
  fakeTunnelToken,
  isAlive,
  makeTls,
  NAMED_HOSTNAME,
  NGROK_STANDIN,
  readInfo,
  STANDIN,
  startTailnet,
  startRelay,
  TAILNET_HOST,
  TAILSCALE_STANDIN,
  waitFor,
  type Relay,
  type Tls,
} from './helpers';

let tls: Tls;
let relay: Relay;
let dir: string;
let n = 0;
const tunnels: Tunnel[] = [];
const closers: (() => void)[] = [];

beforeAll(async () => {
  tls = makeTls();
  relay = await startRelay();
  dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-agents-'));
});
afterAll(async () => {
  await relay.close();
  tls.cleanup();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(tunnels.splice(0).map((t) => t.stop().catch(() => {})));
  for (const c of closers.splice(0)) c();
});

function open(settings: TunnelSettings, env: Record<string, string>, infoFile: string, over: { pollMs?: number } = {}): Tunnel {
  const agent = settings.kind.startsWith('tailscale') && over.pollMs
    ? tailscaleTunnel({ mode: settings.kind === 'tailscale-funnel' ? 'funnel' : 'serve', explicitPath: settings.tailscalePath, pollMs: over.pollMs })
    : tunnelAgentFor(settings);
  const tunnel = agent.create(agent.locate(), {
    localUrl: relay.url,
    healthPath: '/v1/health',
    env: { PATH: process.env.PATH, HOME: dir, ...env, DESKRELAY_TUNNEL_PASS_ENV: Object.keys(env).join(',') },
    probe: { agent: new EdgeAgent(infoFile, tls.cert), intervalMs: 100 },
    probeTimeoutMs: 10_000,
    stopGraceMs: 1000,
  });
  tunnels.push(tunnel);
  return tunnel;
}

const file = (name: string) => path.join(dir, `${name}-${n++}.json`);

describe('named Cloudflare tunnel (cloudflared tunnel run, token in TUNNEL_TOKEN)', () => {
  function named(mode = 'normal', token = fakeTunnelToken()) {
    const infoFile = file('named');
    const env = {
      STANDIN_CLOUDFLARED_MODE: mode,
      STANDIN_CLOUDFLARED_INFO: infoFile,
      STANDIN_CLOUDFLARED_TLS_KEY: tls.keyFile,
      STANDIN_CLOUDFLARED_TLS_CERT: tls.certFile,
      STANDIN_CLOUDFLARED_NAMED_HOSTNAME: NAMED_HOSTNAME,
      STANDIN_CLOUDFLARED_NAMED_SERVICE: `http://localhost:${relay.port}`,
      STANDIN_CLOUDFLARED_DUMP_ENV: '1',
    };
    const tunnel = open({ kind: 'cloudflare-named', cloudflaredPath: STANDIN, hostname: NAMED_HOSTNAME, token }, env, infoFile);
    return { tunnel, infoFile, token };
  }

  it('announces https://<hostname> before the probe, is up once it answers, and its URL lasts', async () => {
    const { tunnel, infoFile, token } = named();
    const announced: string[] = [];
    tunnel.on('url', (u) => announced.push(u));
    expect(tunnel.lastingUrl).toBe(true);
    const url = await tunnel.start();
    expect(url).toBe(`https://${NAMED_HOSTNAME}`);
    expect(announced).toEqual([url]);
    expect(relay.healthHosts).toContain(NAMED_HOSTNAME);
    const info = readInfo(infoFile) as ReturnType<typeof readInfo> & { tokenFrom: string };
    // The token went through the environment, never the command line `ps` shows.
    expect(info.tokenFrom).toBe('env');
    expect(info.env!.TUNNEL_TOKEN).toBe(token);
    expect(info.argv.join(' ')).not.toContain(token);
    expect(info.argv).toEqual(expect.arrayContaining(['tunnel', '--no-autoupdate', '--config', 'run']));
    expect(tunnel.lastLines.join('\n')).toContain('token:*****');
    expect(tunnel.lastLines.join('\n')).not.toContain(token);
    expect((await tunnel.health()).ok).toBe(true);
    // A restart keeps the address.
    expect(await tunnel.restart()).toBe(url);
  });

  it('cloudflared refusing the token: the start fails with its own message, without the token', async () => {
    const { tunnel, token } = named('normal', 'bm90LWEtdG9rZW4=');
    const err = await tunnel.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TunnelError);
    expect((err as Error).message).toContain('Provided Tunnel token is not valid.');
    expect((err as Error).message).not.toContain(token);
    expect(tunnel.state).toBe('down');
  });

  it('no token or no hostname: says what to set, starts nothing', async () => {
    const { tunnel } = named('normal', '');
    await expect(tunnel.start()).rejects.toThrow(/Set Tunnel Token|DESKRELAY_TUNNEL_TOKEN/);
    const agent = tunnelAgentFor({ kind: 'cloudflare-named', cloudflaredPath: STANDIN, token: fakeTunnelToken() });
    expect(() => agent.create(STANDIN, { localUrl: relay.url, healthPath: '/v1/health' })).toThrow(/hostname/);
  });

  it('cloudflared dying after up: down, naming cloudflared, saying the address stays', async () => {
    const { tunnel } = named('die-later');
    const downs: string[] = [];
    tunnel.on('down', (m) => downs.push(m));
    await tunnel.start();
    await waitFor(() => downs.length > 0, 10_000, 'down');
    expect(downs[0]).toMatch(/cloudflared exited with code 2/);
    expect(downs[0]).toMatch(/address stays the same/);
    expect(tunnel.state).toBe('down');
  });

  it('losing all four connections is down; registering again is up, same URL', async () => {
    const { tunnel } = named('lose-connection');
    const states: string[] = [];
    tunnel.on('state', (s) => states.push(s));
    const url = await tunnel.start();
    await waitFor(() => states.includes('down'), 10_000, 'down');
    await waitFor(() => tunnel.state === 'up', 10_000, 'up again');
    expect(tunnel.url).toBe(url);
  });

  it('stop ends cloudflared', async () => {
    const { tunnel, infoFile } = named();
    await tunnel.start();
    const pid = readInfo(infoFile).pid;
    await tunnel.stop();
    await waitFor(() => !isAlive(pid), 5000, 'cloudflared to exit');
  });
});

describe('ngrok (ngrok http … --log stdout --log-format json)', () => {
  function ngrok(mode = 'normal', extra: Record<string, string> = {}, settings: Partial<TunnelSettings> = {}) {
    const infoFile = file('ngrok');
    const env = { STANDIN_NGROK_MODE: mode, STANDIN_NGROK_INFO: infoFile, STANDIN_NGROK_TLS_KEY: tls.keyFile, STANDIN_NGROK_TLS_CERT: tls.certFile, STANDIN_NGROK_DUMP_ENV: '1', ...extra };
    return { tunnel: open({ kind: 'ngrok', ngrokPath: NGROK_STANDIN, ...settings }, env, infoFile), infoFile };
  }
  const AUTHTOKEN = '2abcDEFghiJKLmnoPQRstu_3vwxYZ0123456789abcdEF';

  it('reads the URL from the started tunnel record, probes it, passes NGROK_AUTHTOKEN only in its environment', async () => {
    const { tunnel, infoFile } = ngrok('normal', {}, { token: AUTHTOKEN });
    const url = await tunnel.start();
    const info = readInfo(infoFile) as ReturnType<typeof readInfo> & { authtokenSource: string };
    expect(url).toBe(info.url);
    expect(url).toMatch(/^https:\/\/[0-9a-f]{4}-203-0-113-7\.ngrok-free\.app$/);
    expect(info.argv).toEqual(['http', relay.url, '--log', 'stdout', '--log-format', 'json', '--inspect=false']);
    expect(info.authtokenSource).toBe('env');
    expect(info.env!.NGROK_AUTHTOKEN).toBe(AUTHTOKEN);
    expect(tunnel.lastingUrl).toBe(true);
    expect(relay.healthHosts).toContain(new URL(url).host);
  });

  it("127.0.0.1:4040 held by another agent's API: DeskRelay reports its own agent's URL and never asks 4040", async () => {
    // What a second agent (or anything else) on ngrok's default web port looks like: another
    // tunnel list at GET /api/tunnels. Ours then serves its API on the next port (the stand-in
    // does as the real agent does), so an address read from 4040 would be the other agent's.
    const asked: string[] = [];
    const other = http.createServer((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        tunnels: [{ name: 'command_line', uri: '/api/tunnels/command_line', public_url: 'https://someone-else.ngrok-free.app', proto: 'https', config: { addr: relay.url, inspect: true } }],
        uri: '/api/tunnels',
      }));
    });
    const held = await holdPort(other, 4040, 15_000);
    closers.push(() => other.close());
    const { tunnel, infoFile } = ngrok('normal', {}, { token: AUTHTOKEN });
    const url = await tunnel.start();
    const info = readInfo(infoFile) as ReturnType<typeof readInfo> & { webAddr: string };
    expect(url).toBe(info.url);
    expect(url).not.toBe('https://someone-else.ngrok-free.app');
    // The clash really happened: our agent's API is not on 4040.
    expect(info.webAddr).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(info.webAddr).not.toBe('127.0.0.1:4040');
    expect(relay.healthHosts).toContain(new URL(url).host);
    // Held by something not ours (a real ngrok on this machine): the clash is there all the same,
    // but what it was asked is not ours to see.
    if (held) expect(asked).toEqual([]);
  });

  it('asks its agent to keep no copy of the requests it forwards (--inspect=false)', async () => {
    // ngrok's inspector keeps each request whole (the bearer token, the chat) and serves it to
    // any local process at /api/requests/http.
    const { tunnel, infoFile } = ngrok('normal', {}, { token: AUTHTOKEN });
    await tunnel.start();
    const { webAddr } = readInfo(infoFile) as ReturnType<typeof readInfo> & { webAddr: string };
    const listed = (await (await fetch(`http://${webAddr}/api/tunnels`)).json()) as { tunnels: { public_url: string; config: { inspect: boolean } }[] };
    expect(listed.tunnels.map((t) => [t.public_url, t.config.inspect])).toEqual([[tunnel.url, false]]);
  });

  it("without NGROK_AUTHTOKEN it uses ngrok's own config file (found through HOME)", async () => {
    const home = mkdtempSync(path.join(dir, 'home-'));
    const config = path.join(home, '.config', 'ngrok');
    mkdirSync(config, { recursive: true });
    writeFileSync(path.join(config, 'ngrok.yml'), `version: "3"\nagent:\n  authtoken: x\nauthtoken: ${AUTHTOKEN}\n`);
    const { tunnel, infoFile } = ngrok('normal', { HOME: home });
    await tunnel.start();
    expect((readInfo(infoFile) as unknown as { authtokenSource: string }).authtokenSource).toBe('config');
  });

  it('--url for the user\'s own domain', async () => {
    const { tunnel, infoFile } = ngrok('normal', {}, { token: AUTHTOKEN, hostname: 'deskrelay-test.ngrok-free.app' });
    expect(await tunnel.start()).toBe('https://deskrelay-test.ngrok-free.app');
    expect(readInfo(infoFile).argv.slice(-2)).toEqual(['--url', 'https://deskrelay-test.ngrok-free.app']);
  });

  it('no authtoken anywhere: fails with ngrok\'s ERR_NGROK_4018 message', async () => {
    const { tunnel } = ngrok('normal');
    await expect(tunnel.start()).rejects.toThrow(/ERR_NGROK_4018[\s\S]*ngrok exited with code 1|ngrok exited with code 1[\s\S]*ERR_NGROK_4018/);
  });

  it('a token that ngrok repeats is redacted from every line DeskRelay keeps', async () => {
    const { tunnel } = ngrok('normal', {}, { token: 'short-bad-token' });
    const err = (await tunnel.start().catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('ERR_NGROK_4018');
    expect(err.message).not.toContain('short-bad-token');
  });

  it('ngrok dying after up: down, naming ngrok', async () => {
    const { tunnel } = ngrok('die-later', { STANDIN_NGROK_DIE_AFTER_MS: '500' }, { token: AUTHTOKEN });
    const downs: string[] = [];
    tunnel.on('down', (m) => downs.push(m));
    await tunnel.start();
    await waitFor(() => downs.length > 0, 10_000, 'down');
    expect(downs[0]).toMatch(/ngrok exited with code 2/);
  });

  it('a lost session is down until ngrok re-establishes it', async () => {
    const { tunnel } = ngrok('lose-session', {}, { token: AUTHTOKEN });
    const states: string[] = [];
    tunnel.on('state', (s) => states.push(s));
    await tunnel.start();
    await waitFor(() => states.includes('down'), 10_000, 'down');
    await waitFor(() => tunnel.state === 'up', 10_000, 'up again');
  });

  it('missing: names the path and how to install ngrok', () => {
    const agent = tunnelAgentFor({ kind: 'ngrok', ngrokPath: path.join(dir, 'no-ngrok') });
    expect(() => agent.locate()).toThrow(/ngrok was not found at .*no-ngrok \(the path given by deskrelay\.ngrokPath \/ --ngrok\)[\s\S]*ngrok config add-authtoken/);
  });
});

describe('Tailscale Funnel and Serve (tailscale funnel|serve --bg, status --json)', () => {
  async function tailnet(over: object = {}) {
    const { stateFile, infoFile, state } = await startTailnet(tls, file, closers, over);
    const setState = (change: (s: Record<string, any>) => void) => {
      const s = state();
      change(s);
      writeFileSync(stateFile, JSON.stringify(s));
    };
    const tunnel = (kind: 'tailscale-funnel' | 'tailscale-serve' = 'tailscale-funnel', pollMs?: number) =>
      open({ kind, tailscalePath: TAILSCALE_STANDIN }, { STANDIN_TAILSCALE_STATE: stateFile }, infoFile, { pollMs });
    return { stateFile, state, setState, tunnel };
  }

  it('Funnel: publishes the relay port, reads the URL from status --json, probes it; stop removes its handler', async () => {
    const t = await tailnet();
    const tunnel = t.tunnel('tailscale-funnel');
    const url = await tunnel.start();
    expect(url).toBe(`https://${TAILNET_HOST}`);
    expect(tunnel.lastingUrl).toBe(true);
    expect(tunnel.pid).toBeUndefined();
    const calls = t.state().calls as string[][];
    expect(calls).toContainEqual(['funnel', '--bg', '--https=443', String(relay.port)]);
    expect(calls).toContainEqual(['funnel', 'status', '--json']);
    expect(t.state().serve.AllowFunnel).toEqual({ [`${TAILNET_HOST}:443`]: true });
    expect(relay.healthHosts).toContain(TAILNET_HOST);
    await tunnel.stop();
    expect(t.state().calls).toContainEqual(['funnel', '--https=443', 'off']);
    expect(t.state().serve).toEqual({});
  });

  it("stop removes only DeskRelay's handler: the user's own Serve config stays as it was", async () => {
    const mine = {
      TCP: { '443': { HTTPS: true }, '22': { TCPForward: '127.0.0.1:22' } },
      Web: { [`${TAILNET_HOST}:443`]: { Handlers: { '/grafana': { Proxy: 'http://127.0.0.1:3000' } } } },
    };
    const t = await tailnet({ serve: mine });
    const tunnel = t.tunnel('tailscale-serve');
    const url = await tunnel.start();
    // 443 holds the user's /grafana: DeskRelay takes the next port Funnel and Serve allow.
    expect(url).toBe(`https://${TAILNET_HOST}:8443`);
    expect(t.state().serve.Web[`${TAILNET_HOST}:443`]).toEqual(mine.Web[`${TAILNET_HOST}:443`]);
    await tunnel.stop();
    expect(t.state().serve).toEqual(mine);
  });

  it('a handler the user replaced meanwhile is not removed', async () => {
    const t = await tailnet();
    const tunnel = t.tunnel('tailscale-serve');
    await tunnel.start();
    t.setState((s) => {
      s.serve.Web[`${TAILNET_HOST}:443`].Handlers['/'] = { Proxy: 'http://127.0.0.1:9999' };
    });
    await tunnel.stop();
    expect(t.state().serve.Web[`${TAILNET_HOST}:443`].Handlers['/']).toEqual({ Proxy: 'http://127.0.0.1:9999' });
    expect((t.state().calls as string[][]).some((c) => c.includes('off'))).toBe(false);
  });

  it("relays the CLI's own message: tailscaled not running, logged out, stopped, Funnel not enabled", async () => {
    let t = await tailnet({ daemon: false });
    await expect(t.tunnel('tailscale-funnel').start()).rejects.toThrow(/Failed to connect to local Tailscale daemon/);
    t = await tailnet({ BackendState: 'NeedsLogin' });
    const loggedOut = (await t.tunnel('tailscale-funnel').start().catch((e: unknown) => e)) as Error;
    // Said as the other cases say it: what is wrong and what to run (issue 21).
    expect(loggedOut.message).toMatch(/^Tailscale is logged out\. Run "tailscale up" to log in, then start the tunnel again\./);
    expect(loggedOut.message).not.toMatch(/failed \(exit code/);
    t = await tailnet({ BackendState: 'Stopped' });
    await expect(t.tunnel('tailscale-serve').start()).rejects.toThrow(/Tailscale is stopped\./);
    t = await tailnet({ caps: { https: true, funnel: false } });
    const err = (await t.tunnel('tailscale-funnel').start().catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/Funnel is not enabled on your tailnet[\s\S]*login\.tailscale\.com\/f\/funnel/);
    expect(t.state().serve).toEqual({});
  });

  it('Funnel waiting for an admin: the CLI waits, DeskRelay shows where to enable it, then comes up', async () => {
    const t = await tailnet({ caps: { https: true, funnel: 'wait' } });
    const tunnel = t.tunnel('tailscale-funnel');
    const progress: string[] = [];
    tunnel.on('progress', (m) => progress.push(m));
    const started = tunnel.start();
    await waitFor(() => progress.some((m) => m.includes('login.tailscale.com/f/funnel')), 10_000, 'the enable URL');
    t.setState((s) => {
      s.caps.funnel = true;
    });
    expect(await started).toBe(`https://${TAILNET_HOST}`);
  });

  it('tailscaled going away is down, coming back is up; our handler removed behind our back is down for good', async () => {
    const t = await tailnet();
    const tunnel = t.tunnel('tailscale-funnel', 100);
    const downs: string[] = [];
    tunnel.on('down', (m) => downs.push(m));
    const url = await tunnel.start();
    t.setState((s) => {
      s.daemon = false;
    });
    await waitFor(() => tunnel.state === 'down', 10_000, 'down');
    expect(downs[0]).toMatch(/Failed to connect to local Tailscale daemon/);
    t.setState((s) => {
      s.daemon = true;
    });
    await waitFor(() => tunnel.state === 'up', 10_000, 'up again');
    expect(tunnel.url).toBe(url);
    t.setState((s) => {
      s.serve = {};
    });
    await waitFor(() => downs.length === 2, 10_000, 'gone');
    expect(downs[1]).toMatch(/handler .* is gone/);
    expect(tunnel.url).toBeUndefined();
  });

  it('missing: names the path and how to install Tailscale', () => {
    const agent = tunnelAgentFor({ kind: 'tailscale-funnel', tailscalePath: path.join(dir, 'no-tailscale') });
    expect(() => agent.locate()).toThrow(/tailscale was not found at .*no-tailscale \(the path given by deskrelay\.tailscalePath \/ --tailscale\)[\s\S]*Install Tailscale/);
  });
});

/**
 * Listens on 127.0.0.1:`port`, waiting up to `waitMs` while something else (another test's
 * stand-in agent) holds it. False when it stays held: then something not ours is there.
 */
async function holdPort(server: http.Server, port: number, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const err = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      server.once('error', resolve);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', resolve);
        resolve(undefined);
      });
    });
    if (!err) return true;
    if (err.code !== 'EADDRINUSE') throw err;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}
