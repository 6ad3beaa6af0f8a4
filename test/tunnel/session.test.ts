/**
 * RelaySession, the one session both hosts run (the CLI's `deskrelay serve`, the extension's
 * RemoteChat): a real RelayServer, the stand-in cloudflared, and a phone's requests through the
 * tunnel over real HTTPS.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cloudflareQuickTunnel, INSTALL_HELP, TunnelError } from '../../server/src/tunnel';
import { RelaySession } from '../../server/src/session/relaySession';
import type { RelayOptions } from '../../server/src';
import { EdgeAgent, isAlive, makeTls, readInfo, STANDIN, standinEnv, standinNames, type Tls } from './helpers';

let tls: Tls;
let n = 0;
const sessions: RelaySession[] = [];
const dirs: string[] = [];

beforeAll(() => {
  tls = makeTls();
});
afterAll(() => tls.cleanup());
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.dispose().catch(() => {})));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Made {
  session: RelaySession;
  infoFile: string;
  agent: EdgeAgent;
}

function makeSession(host: string, opts: { mode?: string; env?: NodeJS.ProcessEnv; binary?: string } = {}): Made {
  const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-session-'));
  dirs.push(dir);
  const infoFile = path.join(tls.dir, `session-info-${process.pid}-${n++}.json`);
  const relay = (): RelayOptions => ({
    host,
    port: 0,
    version: '1.2.3',
    providers: { active: () => ({ ok: true, config: { id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:9', model: 'auto' } }) },
    keys: { get: async () => undefined, howToSet: () => 'set the key' },
    workspaces: () => 0,
    maxConcurrentStreams: () => 4,
    configDir: dir,
  });
  const session = new RelaySession({
    relay,
    tunnel: () => cloudflareQuickTunnel({ explicitPath: opts.binary ?? STANDIN }),
    tunnelEnv: opts.env ?? standinEnv(tls, infoFile, opts.mode ?? 'normal'),
  });
  const agent = new EdgeAgent(infoFile, tls.cert);
  session.tunnelProbe = { agent, intervalMs: 200 };
  sessions.push(session);
  return { session, infoFile, agent };
}

/** A phone's request: HTTPS to the tunnel URL through the stand-in edge. */
function phoneGet(agent: https.Agent, url: string, pathname: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(new URL(pathname, url), { agent, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

const forwardedTo = (infoFile: string) => {
  const argv = readInfo(infoFile).argv;
  return argv[argv.indexOf('--url') + 1];
};

describe('RelaySession: relay, tunnel and pairing in one place', () => {
  it('a relay bound to 0.0.0.0 is tunnelled from 127.0.0.1; pairing, phone and Host allow-list follow the tunnel', async () => {
    const { session, infoFile, agent } = makeSession('0.0.0.0');
    const started = await session.start();
    expect(started.running).toBe(true);
    const port = started.port!;
    const local = session.pairing()!;
    expect(local.viaTunnel).toBe(false);
    expect(local.url).toBe(started.url);

    const events: string[] = [];
    session.on('tunnel-state', (s) => events.push(s));
    const url = await session.startTunnel();

    // The agent forwards to loopback, never to the LAN address the relay also listens on.
    expect(forwardedTo(infoFile)).toBe(`http://127.0.0.1:${port}`);
    expect(events).toEqual(['starting', 'up']);
    expect(session.status()).toMatchObject({ running: true, port, tunnel: 'up', tunnelUrl: url });
    const token = session.relay!.token!;
    const pairing = session.pairing()!;
    expect(pairing).toEqual({
      payload: JSON.stringify({ url, token }),
      link: `${url}/#token=${encodeURIComponent(token)}`,
      url,
      viaTunnel: true,
    });
    // The relay answers the tunnel's Host (it refuses names it was not told about).
    expect(session.relay!.publicHosts).toEqual([new URL(url).hostname]);
    const info = await phoneGet(agent, url, '/v1/remote/info', token);
    expect(info.status).toBe(200);
    expect(JSON.parse(info.body).service).toBe('deskrelay');
    expect((await phoneGet(agent, url, '/v1/remote/info', 'dr_wrong')).status).toBe(401);
    expect(await session.tunnel!.health()).toEqual({ ok: true, answer: 'HTTP 200' });

    const pid = readInfo(infoFile).pid;
    await session.stopTunnel();
    expect(isAlive(pid)).toBe(false);
    expect(session.status().tunnel).toBe('stopped');
    expect(session.pairing()!.viaTunnel).toBe(false);
    expect(session.relay!.publicHosts).toEqual([]);
  });

  it('a relay bound to ::1 only is tunnelled from [::1]', async () => {
    const { session, infoFile, agent } = makeSession('::1');
    const { port } = await session.start();
    const url = await session.startTunnel();
    expect(forwardedTo(infoFile)).toBe(`http://[::1]:${port}`);
    expect((await phoneGet(agent, url, '/v1/remote/info', session.relay!.token)).status).toBe(200);
  });

  it('a relay bound to one LAN address only is not tunnelled over the network: a clear error, nothing started', async (ctx) => {
    const lan = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (!lan) return ctx.skip();
    const { session, infoFile } = makeSession(lan);
    await session.start();
    const err = await session.startTunnel().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TunnelError);
    expect((err as TunnelError).code).toBe('not-loopback');
    expect((err as TunnelError).message).toContain(`listens only on ${lan}`);
    expect(() => readInfo(infoFile)).toThrow(); // cloudflared never ran
    expect(session.status().tunnel).toBe('stopped');
  });

  it('a new token under a running tunnel: the new relay still answers the tunnel, the old token is refused', async () => {
    const { session, agent } = makeSession('127.0.0.1');
    await session.start();
    const url = await session.startTunnel();
    const before = session.relay!.token!;
    const port = session.relay!.port;
    await session.rotateToken();
    const after = session.relay!.token!;
    expect(after).not.toBe(before);
    expect(session.relay!.port).toBe(port);
    expect(session.pairing()!.payload).toBe(JSON.stringify({ url, token: after }));
    expect((await phoneGet(agent, url, '/v1/remote/info', after)).status).toBe(200);
    expect((await phoneGet(agent, url, '/v1/remote/info', before)).status).toBe(401);
  });

  it('stop() ends the tunnel with the relay, and the exit hook goes with dispose()', async () => {
    const { session, infoFile } = makeSession('127.0.0.1');
    const hooks = process.listenerCount('exit');
    await session.start();
    await session.startTunnel();
    const pid = readInfo(infoFile).pid;
    await session.stop();
    expect(session.status()).toEqual({ running: false, url: undefined, port: undefined, tunnel: 'stopped', tunnelUrl: undefined });
    expect(isAlive(pid)).toBe(false);
    expect(session.pairing()).toBeUndefined();
    await session.dispose();
    expect(process.listenerCount('exit')).toBe(hooks - 1);
  });

  it('a cloudflared path that does not exist: agent-missing, naming cloudflared and the path, with the install steps', async () => {
    const missing = path.join(tls.dir, 'not-here', 'cloudflared');
    const { session } = makeSession('127.0.0.1', { binary: missing });
    await session.start();
    const err = await session.startTunnel().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TunnelError);
    expect((err as TunnelError).code).toBe('agent-missing');
    expect((err as TunnelError).message).toMatch(new RegExp(`^cloudflared was not found at ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    expect((err as TunnelError).message).toContain(INSTALL_HELP);
    expect(() => session.locateTunnelAgent()).toThrow(TunnelError);
  });
});

describe('the tunnel agent gets an allow-listed environment (finding 8)', () => {
  const hostile = {
    TUNNEL_BASTION: 'true',
    TUNNEL_EDGE: 'evil.example:7844',
    TUNNEL_CACERT: '/tmp/evil-ca.pem',
    TUNNEL_ORIGIN_CA_POOL: '/tmp/evil-pool.pem',
    TUNNEL_HTTP_HOST_HEADER: 'evil.example',
    TUNNEL_TOKEN: 'eyJhIjoiYmFkIn0',
    OPENAI_API_KEY: 'sk-test-openai-0123456789abcdef',
    ANTHROPIC_API_KEY: 'sk-ant-test-0123456789',
    GEMINI_API_KEY: 'AIzaTest0123456789',
    NODE_OPTIONS: '--max-old-space-size=4096',
    ELECTRON_RUN_AS_NODE: '1',
    AWS_SECRET_ACCESS_KEY: 'aws-secret',
  };
  const wanted = {
    HOME: '/home/deskrelay-test',
    HTTP_PROXY: 'http://proxy.test:3128',
    HTTPS_PROXY: 'http://proxy.test:3128',
    NO_PROXY: 'localhost,127.0.0.1',
    ALL_PROXY: 'socks5://proxy.test:1080',
    http_proxy: 'http://proxy.test:3128',
    https_proxy: 'http://proxy.test:3128',
    no_proxy: 'localhost,127.0.0.1',
    all_proxy: 'socks5://proxy.test:1080',
    SSL_CERT_FILE: '/etc/ssl/test-ca.pem',
    SSL_CERT_DIR: '/etc/ssl/test-certs',
  };

  it('PATH, HOME, proxy and certificate variables reach cloudflared; TUNNEL_*, provider keys and the rest do not', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-session-env-'));
    dirs.push(dir);
    const infoFile = path.join(tls.dir, `env-info-${process.pid}-${n++}.json`);
    const env = { ...standinEnv(tls, infoFile, 'normal', { STANDIN_CLOUDFLARED_DUMP_ENV: '1' }), ...hostile, ...wanted };
    const { session } = makeSession('127.0.0.1', { env });
    session.tunnelProbe = { agent: new EdgeAgent(infoFile, tls.cert), intervalMs: 200 };
    await session.start();
    await session.startTunnel();

    const seen = readInfo(infoFile).env!;
    for (const name of Object.keys(hostile)) expect(seen, name).not.toHaveProperty(name);
    expect(seen).toMatchObject({ ...wanted, PATH: process.env.PATH });
    // Exactly the allow-list, plus the stand-in's own variables the test named in DESKRELAY_TUNNEL_PASS_ENV.
    expect(Object.keys(seen).sort()).toEqual(['PATH', ...Object.keys(wanted), ...standinNames(env)].sort());
  });
});
