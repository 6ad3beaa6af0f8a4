import { afterAll, beforeAll, expect, it } from 'vitest';
import path from 'node:path';
import { AgentProcess as CloudflaredProcess } from '../../server/src/tunnel/process';
import { isAlive, makeTls, STANDIN, standinEnv, waitFor, type Tls } from './helpers';

let tls: Tls;
beforeAll(() => {
  tls = makeTls();
});
afterAll(() => tls.cleanup());

it('kills cloudflared when its watchdog is killed from outside, and reports the exit', async () => {
  const proc = new CloudflaredProcess(STANDIN, ['tunnel', '--url', 'http://127.0.0.1:9', '--no-autoupdate'], {
    env: standinEnv(tls, path.join(tls.dir, 'process-info.json'), 'no-url'),
  });
  try {
    await waitFor(() => proc.pid !== undefined, 10_000, 'cloudflared to start');
    const pid = proc.pid;
    expect(isAlive(pid)).toBe(true);
    process.kill(proc.watchdogPid!, 'SIGKILL');
    const exit = await Promise.race([proc.done, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no exit within 10 s')), 10_000))]);
    expect(exit.signal).toBe('SIGKILL');
    await waitFor(() => !isAlive(pid), 10_000, 'cloudflared to die');
  } finally {
    proc.killSync();
  }
});

it('emits every line cloudflared printed before its exit', async () => {
  const proc = new CloudflaredProcess(STANDIN, ['tunnel', '--url', 'http://127.0.0.1:9'], {
    env: standinEnv(tls, path.join(tls.dir, 'process-info2.json'), 'exit-early'),
  });
  const lines: string[] = [];
  proc.on('line', (l: string) => lines.push(l));
  const exit = await proc.done;
  expect(exit).toEqual({ code: 1, signal: null });
  expect(lines.at(-1)).toMatch(/^failed to request quick Tunnel: /);
  expect(lines.some((l) => l.includes('Requesting new quick Tunnel on trycloudflare.com...'))).toBe(true);
});
