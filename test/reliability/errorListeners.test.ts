/**
 * Issue 21, finding 1: every socket, stream and child process the relay owns has an `error`
 * listener, because an `error` nobody hears is an uncaught exception that ends the process and
 * every stream in it. With an SSE chat, a resumable chat and a WebSocket chat under way and a
 * tunnel agent running, the test walks the process's live handles: the listening server, every
 * server-side connection, every child process and each of its stdio streams.
 */
import type { ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { Server, Socket } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AgentProcess } from '../../server/src/tunnel/process';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { startRelay, type TestRelay } from '../helpers/relay';
import { makeTls, STANDIN, standinEnv, waitFor as waitForTunnel, type Tls } from '../tunnel/helpers';
import { chatHeaders, chatRequestBody, waitFor } from './support';

let t: TestRelay;
let ollama: OllamaStandIn;
let tls: Tls;

beforeAll(async () => {
  ollama = await startOllamaStandIn({ reply: Array.from({ length: 200 }, (_, i) => `t${i} `), chunkDelayMs: 50 });
  t = await startRelay({ maxConcurrentStreams: () => 8 });
  t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'llama3.2' });
  tls = makeTls();
});
afterAll(async () => {
  await t?.close();
  await ollama?.close();
  tls?.cleanup();
});

/** Node's live handles (the owners libuv reports): the public API counts them but does not hand them out. */
const liveHandles = () => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();

function isChild(h: unknown): h is ChildProcess {
  return typeof h === 'object' && h !== null && 'spawnargs' in h && 'stdio' in h;
}

it('the server, each connection it holds, each child process and its stdio all listen for error', async () => {
  const port = Number(new URL(t.url).port);
  const u = new URL(t.url);
  const open: { destroy(): void }[] = [];
  const streamOpen = (headers: Record<string, string>) =>
    new Promise<void>((resolve, reject) => {
      const req = httpRequest({ host: u.hostname, port: u.port, path: '/v1/chat/stream', method: 'POST', headers, agent: false }, (res) => res.once('data', () => resolve()));
      req.on('error', reject);
      req.end(chatRequestBody());
      open.push(req);
    });
  await streamOpen(chatHeaders(t.token));
  await streamOpen({ ...chatHeaders(t.token), 'Idempotency-Key': `walk-${Date.now()}` });
  const ws = new WebSocket(`${t.url.replace('http:', 'ws:')}/v1/chat/ws`, { headers: { Authorization: `Bearer ${t.token}` } });
  ws.on('error', () => {});
  await new Promise<void>((resolve) => ws.once('open', () => (ws.send(chatRequestBody()), ws.once('message', () => resolve()))));
  open.push({ destroy: () => ws.terminate() });
  const agent = new AgentProcess(STANDIN, ['tunnel', '--url', t.url, '--no-autoupdate'], { env: standinEnv(tls, path.join(tls.dir, 'walk-info.json'), 'no-url') });
  try {
    await waitForTunnel(() => agent.pid !== undefined, 10_000, 'the tunnel agent to start');
    await waitFor('three chats under way', () => t.relay.activeStreams, (n) => n === 3);

    const handles = liveHandles();
    const servers = handles.filter((h): h is Server => h instanceof Server && (h.address() as { port?: number } | null)?.port === port);
    const connections = handles.filter((h): h is Socket => h instanceof Socket && h.localPort === port);
    const children = handles.filter(isChild);
    expect(servers).toHaveLength(1);
    // Three chats (SSE, resumable, WebSocket): their server-side sockets at least.
    expect(connections.length).toBeGreaterThanOrEqual(3);
    expect(children.length).toBeGreaterThanOrEqual(1);

    const deaf: string[] = [];
    for (const s of servers) if (s.listenerCount('error') === 0) deaf.push('the listening server');
    for (const c of connections) if (c.listenerCount('error') === 0) deaf.push(`connection from port ${c.remotePort}`);
    for (const child of children) {
      if (child.listenerCount('error') === 0) deaf.push(`child ${child.spawnargs.slice(0, 2).join(' ')}`);
      child.stdio.forEach((stream, fd) => {
        if (stream && stream.listenerCount('error') === 0) deaf.push(`fd ${fd} of child ${child.pid}`);
      });
    }
    expect(deaf).toEqual([]);
  } finally {
    agent.killSync();
    for (const o of open) o.destroy();
  }
}, 30_000);
