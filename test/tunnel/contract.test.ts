/** The Tunnel contract (server/src/tunnel/tunnel.ts) as cloudflared's quick tunnel keeps it, and the agent-neutral pieces. */
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { agentEnv, cloudflareQuickTunnel, forwardUrl, TunnelError, type Tunnel } from '../../server/src/tunnel';
import { EdgeAgent, makeTls, STANDIN, standinEnv, type Tls } from './helpers';

let tls: Tls;
let n = 0;
const tunnels: Tunnel[] = [];
const servers: http.Server[] = [];

beforeAll(() => {
  tls = makeTls();
});
afterAll(() => tls.cleanup());
afterEach(async () => {
  await Promise.all(tunnels.splice(0).map((t) => t.stop().catch(() => {})));
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** A relay stand-in whose only 200 is at `healthPath`: nothing else answers, /v1/health included. */
async function relayAnswering(healthPath: string): Promise<{ url: string; hits: { path: string; host: string }[] }> {
  const hits: { path: string; host: string }[] = [];
  const server = http.createServer((req, res) => {
    hits.push({ path: req.url ?? '', host: req.headers.host ?? '' });
    res.writeHead(req.url === healthPath ? 200 : 404).end();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, hits };
}

function quick(localUrl: string, healthPath: string, probeTimeoutMs?: number): { tunnel: Tunnel; infoFile: string } {
  const infoFile = path.join(tls.dir, `contract-${process.pid}-${n++}.json`);
  const agent = cloudflareQuickTunnel({ explicitPath: STANDIN });
  const tunnel = agent.create(agent.locate(), {
    localUrl,
    healthPath,
    env: standinEnv(tls, infoFile, 'normal'),
    probe: { agent: new EdgeAgent(infoFile, tls.cert), intervalMs: 100 },
    probeTimeoutMs,
  });
  tunnels.push(tunnel);
  return { tunnel, infoFile };
}

describe('Tunnel contract: the cloudflared quick tunnel', () => {
  it('describes itself, and does nothing before start()', async () => {
    const agent = cloudflareQuickTunnel({ explicitPath: STANDIN });
    expect(agent).toMatchObject({ kind: 'cloudflare-quick', program: 'cloudflared', title: 'the cloudflared quick tunnel' });
    expect(agent.locate()).toBe(STANDIN);
    const { tunnel } = quick('http://127.0.0.1:9', '/v1/health');
    expect(tunnel).toMatchObject({ kind: 'cloudflare-quick', agent: 'cloudflared', lastingUrl: false, state: 'stopped', url: undefined, pid: undefined });
    expect(await tunnel.health()).toEqual({ ok: false, answer: 'not up' });
  });

  it('probes the health path it is given, not a built-in one; announces the URL before probing it', async () => {
    const relay = await relayAnswering('/somewhere/else/health');
    const { tunnel } = quick(relay.url, '/somewhere/else/health');
    const order: string[] = [];
    tunnel.on('url', (u) => order.push(`url ${u} after ${relay.hits.length} hits`));
    tunnel.on('state', (s) => order.push(s));
    const url = await tunnel.start();
    expect(order).toEqual(['starting', `url ${url} after 0 hits`, 'up']);
    expect(relay.hits.map((h) => h.path)).toEqual(['/somewhere/else/health']);
    expect(relay.hits[0].host).toBe(new URL(url).hostname);
    expect(await tunnel.health()).toEqual({ ok: true, answer: 'HTTP 200' });
    expect(relay.hits.map((h) => h.path)).toEqual(['/somewhere/else/health', '/somewhere/else/health']);
  });

  it('the same relay with /v1/health as the path never comes up: the message names the path it probed', async () => {
    const relay = await relayAnswering('/somewhere/else/health');
    const { tunnel } = quick(relay.url, '/v1/health', 1000);
    const err = await tunnel.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TunnelError);
    expect((err as TunnelError).message).toMatch(/did not answer https:\/\/[a-z-]+\.trycloudflare\.com\/v1\/health within 1 s \(last answer: HTTP 404\)/);
    expect(tunnel.state).toBe('down');
  });

  it('health() reports the answer now: the relay gone behind a running tunnel is HTTP 502', async () => {
    const relay = await relayAnswering('/h');
    const { tunnel } = quick(relay.url, '/h');
    await tunnel.start();
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    expect(await tunnel.health()).toEqual({ ok: false, answer: 'HTTP 502' });
    expect(tunnel.state).toBe('up'); // cloudflared itself is fine: the relay is not
  });
});

describe('forwardUrl: a tunnel always forwards to loopback', () => {
  it.each([
    ['0.0.0.0', 'http://127.0.0.1:5000'],
    ['::', 'http://127.0.0.1:5000'],
    ['127.0.0.1', 'http://127.0.0.1:5000'],
    ['127.0.0.2', 'http://127.0.0.2:5000'],
    ['::ffff:127.0.0.1', 'http://127.0.0.1:5000'],
    ['::1', 'http://[::1]:5000'],
    ['[::1]', 'http://[::1]:5000'],
  ])('bound to %s → %s', (bound, url) => {
    expect(forwardUrl(bound, 5000)).toBe(url);
  });

  it.each(['192.168.1.20', 'fd00::2', '10.0.0.1'])('bound to %s only: refused, naming the address', (bound) => {
    let err: unknown;
    try {
      forwardUrl(bound, 5000);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TunnelError);
    expect((err as TunnelError).code).toBe('not-loopback');
    expect((err as TunnelError).message).toContain(`listens only on ${bound}`);
  });
});

describe('agentEnv: the allow-list', () => {
  const source = {
    PATH: '/usr/bin',
    HOME: '/home/u',
    https_proxy: 'http://p:1',
    SSL_CERT_DIR: '/certs',
    TUNNEL_BASTION: 'true',
    TUNNEL_EDGE: 'x:1',
    OPENAI_API_KEY: 'sk-x',
    Path: '/win/path',
    LANG: 'C.UTF-8',
  };

  it('POSIX: exact names, both proxy spellings, nothing else', () => {
    expect(agentEnv(source, { platform: 'linux' })).toEqual({ PATH: '/usr/bin', HOME: '/home/u', https_proxy: 'http://p:1', SSL_CERT_DIR: '/certs' });
  });

  it('Windows: names match whatever their case, and the Windows homes and system folders come along', () => {
    const win = { Path: 'C:\\bin', USERPROFILE: 'C:\\Users\\u', appdata: 'C:\\a', LOCALAPPDATA: 'C:\\l', SystemRoot: 'C:\\Windows', TEMP: 'C:\\t', TMP: 'C:\\t', ComSpec: 'cmd.exe', PATHEXT: '.EXE', TUNNEL_EDGE: 'x', OPENAI_API_KEY: 'sk' };
    const out = agentEnv(win, { platform: 'win32' });
    expect(out).not.toHaveProperty('TUNNEL_EDGE');
    expect(out).not.toHaveProperty('OPENAI_API_KEY');
    expect(Object.keys(out).sort()).toEqual(['ComSpec', 'LOCALAPPDATA', 'PATHEXT', 'Path', 'SystemRoot', 'TEMP', 'TMP', 'USERPROFILE', 'appdata'].sort());
  });

  it('DESKRELAY_TUNNEL_PASS_ENV adds exact names only (no wildcard brings TUNNEL_* back); an implementation may set its own', () => {
    const out = agentEnv({ ...source, MY_CORP_VAR: 'v', DESKRELAY_TUNNEL_PASS_ENV: 'MY_CORP_VAR, TUNNEL_*' }, { platform: 'linux', set: { TUNNEL_TOKEN: 'given on purpose' } });
    expect(out.MY_CORP_VAR).toBe('v');
    expect(out).not.toHaveProperty('TUNNEL_BASTION');
    expect(out).not.toHaveProperty('TUNNEL_EDGE');
    expect(out).not.toHaveProperty('DESKRELAY_TUNNEL_PASS_ENV');
    expect(out.TUNNEL_TOKEN).toBe('given on purpose');
  });
});
