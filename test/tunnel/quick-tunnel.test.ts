import { existsSync, readFileSync, statSync } from 'node:fs';
import https from 'node:https';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { QuickTunnel, stopAllTunnelsSync, TunnelError, type QuickTunnelOptions, type TunnelState } from '../../server/src/tunnel';
import { EdgeAgent, HEALTH_PATH, isAlive, makeTls, readInfo, startRelay, STANDIN, standinEnv, waitFor, type Relay, type Tls } from './helpers';

let tlsFiles: Tls;
let relay: Relay;
let infoFile: string;
const tunnels: QuickTunnel[] = [];

beforeAll(() => {
  tlsFiles = makeTls();
});
afterAll(() => tlsFiles.cleanup());

let n = 0;
beforeEach(async () => {
  relay = await startRelay();
  infoFile = path.join(tlsFiles.dir, `info-${process.pid}-${n++}.json`);
});

afterEach(async () => {
  // Never leave a stand-in cloudflared behind, whatever the test did.
  await Promise.all(tunnels.splice(0).map((t) => t.stop().catch(() => {})));
  await relay.close();
});

function tunnel(mode: string, extra: Record<string, string> = {}, opts: Partial<QuickTunnelOptions> = {}): QuickTunnel {
  const t = new QuickTunnel({
    binary: STANDIN,
    localUrl: relay.url,
    healthPath: HEALTH_PATH,
    env: standinEnv(tlsFiles, infoFile, mode, extra),
    probe: { agent: new EdgeAgent(infoFile, tlsFiles.cert), intervalMs: 200 },
    stopGraceMs: 2000,
    ...opts,
  });
  tunnels.push(t);
  return t;
}

function record(t: QuickTunnel) {
  const events: { states: TunnelState[]; progress: string[]; down: string[] } = { states: [], progress: [], down: [] };
  t.on('state', (s) => events.states.push(s));
  t.on('progress', (m) => events.progress.push(m));
  t.on('down', (m) => events.down.push(m));
  return events;
}

async function rejection(p: Promise<unknown>): Promise<TunnelError> {
  const err = await p.then(
    () => {
      throw new Error('expected start() to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TunnelError);
  return err as TunnelError;
}

const URL_SHAPE = /^https:\/\/[a-z]+(?:-[a-z]+){3}\.trycloudflare\.com$/;

describe('QuickTunnel through the stand-in cloudflared', () => {
  it('starts cloudflared with the isolating arguments, reports the URL after /v1/health answered through it, and stops cleanly', async () => {
    const t = tunnel('normal');
    const events = record(t);
    let healthSeenWhenUp = -1;
    t.on('state', (s) => {
      if (s === 'up') healthSeenWhenUp = relay.healthHosts.length;
    });

    const url = await t.start();

    const info = readInfo(infoFile);
    expect(url).toMatch(URL_SHAPE);
    expect(url).toBe(info.url);
    expect(t.url).toBe(url);
    expect(t.state).toBe('up');
    expect(events.states).toEqual(['starting', 'up']);
    // The probe went through the forwarder with the public Host, before the tunnel was called up.
    expect(healthSeenWhenUp).toBeGreaterThanOrEqual(1);
    expect(relay.healthHosts[0]).toBe(info.hostname);

    const argv = info.argv;
    expect(argv[0]).toBe('tunnel');
    expect(argv).toContain('--no-autoupdate');
    expect(argv[argv.indexOf('--url') + 1]).toBe(`http://127.0.0.1:${relay.port}`);
    expect(argv[argv.indexOf('--metrics') + 1]).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(argv[argv.indexOf('--metrics') + 1]).not.toBe('127.0.0.1:0');
    const config = argv[argv.indexOf('--config') + 1];
    expect(path.isAbsolute(config)).toBe(true);
    expect(config.startsWith(tmpdir())).toBe(true);
    expect(config.startsWith(path.join(homedir(), '.cloudflared'))).toBe(false);
    expect(statSync(config).size).toBe(0);
    // cloudflared really listens for metrics where we told it to.
    const quick = await fetch(`http://${info.metrics}/quicktunnel`).then((r) => r.json());
    expect(quick).toEqual({ hostname: info.hostname });
    expect(info.metrics).toBe(argv[argv.indexOf('--metrics') + 1]);

    const pid = t.pid;
    expect(pid).toBe(info.pid);
    expect(isAlive(pid)).toBe(true);
    await t.stop();
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(config)).toBe(false);
    expect(existsSync(path.dirname(config))).toBe(false);
    expect(t.state).toBe('stopped');
    expect(t.url).toBeUndefined();
    expect(events.down).toEqual([]); // a stop is not an outage
    expect(t.lastLines.some((l) => l.includes('Registered tunnel connection connIndex=0'))).toBe(true);
  });

  it('retries the health probe through 530 answers, with progress, and only then calls the tunnel up', async () => {
    const t = tunnel('530', { STANDIN_CLOUDFLARED_530_COUNT: '4' });
    const events = record(t);
    const url = await t.start();
    expect(url).toMatch(URL_SHAPE);
    const waiting = events.progress.filter((m) => /^Waiting for the tunnel to answer \(\d+ s\)…$/.test(m));
    expect(waiting.length).toBeGreaterThanOrEqual(4);
    expect(events.progress[0]).toBe('Starting cloudflared…');
    expect(events.progress).toContain(`cloudflared opened ${url}; waiting for the tunnel to answer…`);
    expect(relay.healthHosts.length).toBe(1);
  });

  it('fails with the last answer when the tunnel never answers 200 within the probe limit', async () => {
    const t = tunnel('530', { STANDIN_CLOUDFLARED_530_COUNT: '1000' }, { probeTimeoutMs: 1500 });
    const started = Date.now();
    const err = await rejection(t.start());
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(err.message).toMatch(/did not answer .*\/v1\/health within 2 s \(last answer: HTTP 530\)/);
    expect(err.message).toContain('Last lines from cloudflared');
    expect(t.state).toBe('down');
    expect(isAlive(readInfo(infoFile).pid)).toBe(false);
  });

  it('streams an SSE response through the forwarder incrementally, with the public Host header', async () => {
    let sawFirst!: () => void;
    const firstSeen = new Promise<void>((resolve) => (sawFirst = resolve));
    let chatHost = '';
    relay.onChat = (req, res) => {
      chatHost = req.headers.host ?? '';
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' });
      res.write('data: {"type":"token","delta":"Hel"}\n\n');
      // The second event is written only once the phone side has the first: a buffering forwarder deadlocks here.
      const timeout = setTimeout(() => res.destroy(), 5000);
      void firstSeen.then(() => {
        clearTimeout(timeout);
        res.end('data: {"type":"done","content":"Hel"}\n\n');
      });
    };
    const t = tunnel('normal');
    const url = await t.start();

    const received: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = https.request(
        new URL('/v1/chat/stream', url),
        { method: 'POST', agent: new EdgeAgent(infoFile, tlsFiles.cert), headers: { 'content-type': 'application/json', accept: 'text/event-stream' } },
        (res) => {
          expect(res.statusCode).toBe(200);
          expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
          let buffer = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buffer += chunk;
            let i;
            while ((i = buffer.indexOf('\n\n')) >= 0) {
              received.push(buffer.slice(0, i));
              buffer = buffer.slice(i + 2);
              if (received.length === 1) sawFirst();
            }
          });
          res.on('end', resolve);
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end('{"messages":[{"role":"user","content":"hi"}]}');
    });
    expect(received).toEqual(['data: {"type":"token","delta":"Hel"}', 'data: {"type":"done","content":"Hel"}']);
    expect(chatHost).toBe(new URL(url).hostname);
  });

  it('cloudflared never printing a URL: a clear error with its last lines, within the (shortened) limit', async () => {
    const t = tunnel('no-url', {}, { urlTimeoutMs: 1500 });
    const started = Date.now();
    const err = await rejection(t.start());
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(err.message).toContain('cloudflared printed no tunnel URL within 2 s');
    expect(err.message).toContain('Requesting new quick Tunnel on trycloudflare.com...');
    expect(err.lastLines.at(-1)).toContain('Requesting new quick Tunnel on trycloudflare.com...');
    expect(t.state).toBe('down');
    expect(isAlive(readInfo(infoFile).pid)).toBe(false);
  });

  it('cloudflared exiting before the URL: reported within 10 s with its last lines, api.trycloudflare.com not taken for the URL', async () => {
    const t = tunnel('exit-early');
    const events = record(t);
    const started = Date.now();
    const err = await rejection(t.start());
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(err.message).toContain('cloudflared exited with code 1 before it printed a tunnel URL.');
    expect(err.message).toContain('failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel"');
    expect(t.url).toBeUndefined();
    expect(events.states).toEqual(['starting', 'down']);
  });

  it('cloudflared that cannot be started at all says so, naming the binary', async () => {
    const t = tunnel('normal', {}, { binary: path.join(tlsFiles.dir, 'no-such-cloudflared') });
    const err = await rejection(t.start());
    expect(err.message).toContain(`Could not start cloudflared at ${path.join(tlsFiles.dir, 'no-such-cloudflared')}`);
    expect(err.message).toContain('ENOENT');
  });

  it('cloudflared dying after the tunnel was up: state and a down event naming cloudflared, within 10 s', async () => {
    const t = tunnel('die-later', { STANDIN_CLOUDFLARED_DIE_AFTER_MS: '1500' });
    const url = await t.start();
    const pid = t.pid;
    const down = new Promise<string>((resolve) => t.once('down', resolve));
    const started = Date.now();
    const message = await Promise.race([down, new Promise<string>((_, reject) => setTimeout(() => reject(new Error('no down event within 10 s')), 10_000))]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(message).toContain('cloudflared exited with code 2');
    expect(message).toContain(url);
    expect(message).toContain('panic: runtime error');
    expect(message).toMatch(/pair again/);
    expect(t.state).toBe('down');
    expect(t.url).toBeUndefined();
    expect(isAlive(pid)).toBe(false);
  });

  it('a lost connection flips the state to down with an event, and back up when cloudflared reconnects', async () => {
    const t = tunnel('lose-connection', { STANDIN_CLOUDFLARED_LOSE_AFTER_MS: '300', STANDIN_CLOUDFLARED_RECONNECT_MS: '500' });
    const events = record(t);
    const url = await t.start();
    await waitFor(() => events.states.at(-1) === 'up' && events.down.length === 1, 10_000, 'down then up again');
    expect(events.states).toEqual(['starting', 'up', 'down', 'up']);
    expect(events.down[0]).toMatch(/^cloudflared lost its connection to Cloudflare/);
    expect(events.down[0]).toContain('timeout: no recent network activity');
    expect(t.url).toBe(url);
    expect(isAlive(t.pid)).toBe(true);
  });

  it('stop() during start: start() rejects, nothing is left running', async () => {
    const t = tunnel('no-url');
    const starting = t.start();
    await waitFor(() => t.pid !== undefined, 10_000, 'cloudflared to be spawned');
    const pid = t.pid;
    expect(isAlive(pid)).toBe(true);
    await t.stop();
    const err = await rejection(starting);
    expect(err.message).toContain('stopped before it was up');
    expect(isAlive(pid)).toBe(false);
    expect(t.state).toBe('stopped');
  });

  it('restart() gives a new cloudflared with a new URL', async () => {
    const t = tunnel('normal');
    const first = await t.start();
    const firstPid = t.pid;
    let second = await t.restart();
    // Four random words can repeat; a new process is what matters, a new URL is what the user sees.
    for (let i = 0; second === first && i < 3; i++) second = await t.restart();
    expect(second).not.toBe(first);
    expect(second).toBe(readInfo(infoFile).url);
    expect(isAlive(firstPid)).toBe(false);
    expect(t.pid).not.toBe(firstPid);
    expect(t.state).toBe('up');
  });

  it('stop() kills a cloudflared that ignores SIGTERM (waiting for requests in flight) after the grace period', async () => {
    const t = tunnel('normal', { STANDIN_CLOUDFLARED_GRACE_MS: '60000' }, { stopGraceMs: 300 });
    await t.start();
    const pid = t.pid;
    const started = Date.now();
    await t.stop();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(isAlive(pid)).toBe(false);
  });

  it('stopAllTunnelsSync() (for process exit) kills cloudflared and removes the temp config at once', async () => {
    const t = tunnel('normal');
    await t.start();
    const pid = t.pid;
    const argv = readInfo(infoFile).argv;
    const config = argv[argv.indexOf('--config') + 1];
    expect(existsSync(config)).toBe(true);
    stopAllTunnelsSync();
    expect(existsSync(config)).toBe(false);
    await waitFor(() => !isAlive(pid), 5000, 'cloudflared to die');
  });

  it('the stand-in really logs like cloudflared: box line, connection line with the real fields', async () => {
    const t = tunnel('normal');
    await t.start();
    const lines = t.lastLines;
    expect(lines.some((l) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ INF \|  https:\/\/[a-z-]+\.trycloudflare\.com +\|$/.test(l))).toBe(true);
    expect(
      lines.some((l) =>
        /^\S+Z INF Registered tunnel connection connIndex=0 connection=[0-9a-f-]{36} event=0 ip=[0-9.]+ location=\w+ protocol=quic$/.test(l),
      ),
    ).toBe(true);
    expect(readFileSync(STANDIN, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });
});
