// Shared pieces for the tunnel tests: the stand-in cloudflared, a test certificate for
// *.trycloudflare.com, an https Agent that reaches the stand-in on loopback, a stand-in relay.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const STANDIN = path.resolve(__dirname, '../fixtures/cloudflared/cloudflared');

export interface Tls {
  dir: string;
  keyFile: string;
  certFile: string;
  cert: string;
  cleanup(): void;
}

/**
 * The test edges' hostnames: quick tunnels, the named tunnel's hostname, a tailnet (Funnel/Serve)
 * and ngrok's free domains. The test certificate covers all of them.
 */
export const TEST_HOSTS = ['*.trycloudflare.com', 'relay.deskrelay.test', '*.tail1234.ts.net', '*.ngrok-free.app'];
export const NAMED_HOSTNAME = 'relay.deskrelay.test';
export const TAILNET_HOST = 'desk.tail1234.ts.net';
export const NGROK_STANDIN = path.resolve(__dirname, '../fixtures/ngrok/ngrok');
export const TAILSCALE_STANDIN = path.resolve(__dirname, '../fixtures/tailscale/tailscale');

/** A token shaped like the Cloudflare dashboard's: base64 of {"a":account,"s":secret,"t":tunnel id}. */
export function fakeTunnelToken(): string {
  const secret = Buffer.from(`deskrelay-test-secret-${process.pid}-${Date.now()}`).toString('base64');
  return Buffer.from(JSON.stringify({ a: '0123456789abcdef0123456789abcdef', s: secret, t: '6ff42ae2-765d-4adf-8112-31c55c1551ef' })).toString('base64');
}

/** A throwaway self-signed certificate for the test edges' hostnames (TEST_HOSTS), made with openssl at test time. */
export function makeTls(): Tls {
  const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-tunnel-test-'));
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile,
      '-days', '2', '-subj', '/CN=deskrelay test edge', '-addext', `subjectAltName=${TEST_HOSTS.map((h) => `DNS:${h}`).join(',')}`],
    { stdio: 'ignore' },
  );
  return { dir, keyFile, certFile, cert: readFileSync(certFile, 'utf8'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface StandinInfo {
  pid: number;
  argv: string[];
  mode: string;
  tlsPort?: number;
  url?: string;
  hostname?: string;
  metrics?: string;
  /** The stand-in's whole environment, with STANDIN_CLOUDFLARED_DUMP_ENV set. */
  env?: Record<string, string>;
}

export function readInfo(file: string): StandinInfo {
  return JSON.parse(readFileSync(file, 'utf8')) as StandinInfo;
}

/**
 * The environment a DeskRelay process (or a tunnel's `env` option) gets so the stand-in knows what
 * to do. A tunnel agent only sees an allow-listed environment, so the stand-in's own variables
 * are named in DESKRELAY_TUNNEL_PASS_ENV, the user's way to pass a variable on purpose.
 */
export function standinEnv(t: Tls, infoFile: string, mode: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const own: Record<string, string> = {
    STANDIN_CLOUDFLARED_MODE: mode,
    STANDIN_CLOUDFLARED_INFO: infoFile,
    STANDIN_CLOUDFLARED_TLS_KEY: t.keyFile,
    STANDIN_CLOUDFLARED_TLS_CERT: t.certFile,
    ...extra,
  };
  return { ...process.env, ...own, DESKRELAY_TUNNEL_PASS_ENV: standinNames(own).join(',') };
}

/** The stand-in's own variables among `env` (STANDIN_CLOUDFLARED_*). */
export function standinNames(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env).filter((n) => n.startsWith('STANDIN_CLOUDFLARED_'));
}

/** Where the stand-in relay (and the real one) answers the tunnel's health probe. */
export const HEALTH_PATH = '/v1/health';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { edgeConnection } = require('../fixtures/cloudflared/edge-dial.cjs') as { edgeConnection(infoFile: string): https.Agent['createConnection'] };

/**
 * The one test-only piece of the probe: `<words>.trycloudflare.com` cannot resolve here, so this
 * Agent dials the stand-in's loopback TLS port instead (edge-dial.cjs, as the CLI's preload does).
 * Everything else is the production path: a real HTTPS GET, certificate and hostname verified
 * against the test CA.
 */
export class EdgeAgent extends https.Agent {
  constructor(infoFile: string, ca: string) {
    super({ ca, keepAlive: false });
    this.createConnection = edgeConnection(infoFile);
  }
}

export interface Relay {
  url: string;
  port: number;
  healthHosts: string[];
  server: http.Server;
  /** Handler for POST /v1/chat/stream. */
  onChat?: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  close(): Promise<void>;
}

/** A stand-in for the relay: /v1/health answers like the contract says; chat is up to the test. */
export async function startRelay(): Promise<Relay> {
  const relay = { healthHosts: [] as string[] } as unknown as Relay;
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/health') {
      relay.healthHosts.push(req.headers.host ?? '');
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ status: 'ok', service: 'deskrelay', version: '0.1.0' }));
    } else if (req.method === 'POST' && req.url === '/v1/chat/stream' && relay.onChat) {
      relay.onChat(req, res);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  relay.server = server;
  relay.port = port;
  relay.url = `http://127.0.0.1:${port}`;
  relay.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return relay;
}

/** Alive and not a zombie (an orphan reparented to a PID 1 that does not reap stays a zombie). */
export function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

export async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startTailscaled, initialState } = require('../fixtures/tailscale/tailscaled.cjs') as {
  startTailscaled(o: { stateFile: string; infoFile: string; keyFile: string; certFile: string }): Promise<https.Server>;
  initialState(over?: object): Record<string, unknown>;
};

export interface Tailnet {
  /** The stand-in tailscale CLI's STANDIN_TAILSCALE_STATE. */
  stateFile: string;
  /** Where its edge writes its TLS port (for EdgeAgent and the preload). */
  infoFile: string;
  state(): Record<string, any>;
}

/** The stand-in tailscaled, its initial state changed by `over`, its files named by `file`; its stop goes on `closers`. */
export async function startTailnet(t: Tls, file: (name: string) => string, closers: (() => void)[], over: object = {}): Promise<Tailnet> {
  const stateFile = file('tailscale-state');
  const infoFile = file('tailscaled');
  writeFileSync(stateFile, JSON.stringify(initialState(over)));
  const server = await startTailscaled({ stateFile, infoFile, keyFile: t.keyFile, certFile: t.certFile });
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return { stateFile, infoFile, state: () => JSON.parse(readFileSync(stateFile, 'utf8')) as Record<string, any> };
}
