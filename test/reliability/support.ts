/** Shared checks for the reliability suite: a strict SSE reader, bounded waits, resource counts. */
import { request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll } from 'vitest';
import { spawnBundledChild } from '../helpers/relayChild';

export interface StreamEvent {
  type: string;
  delta?: string;
  content?: string;
  message?: string;
}

/**
 * Reads an SSE body the strict way (CONTRACT §5): only `data: <compact json>\n\n` events and
 * `: \n\n` keep-alives; non-empty token deltas; exactly one terminal event, last; done.content
 * equal to the deltas joined. Returns the events, or throws saying what is wrong.
 */
export function strictEvents(body: string): StreamEvent[] {
  if (!body.endsWith('\n\n')) throw new Error(`stream does not end with a blank line: ${JSON.stringify(body.slice(-80))}`);
  const blocks = body.slice(0, -2).split('\n\n');
  const events: StreamEvent[] = [];
  for (const block of blocks) {
    if (block === ': ') continue;
    if (!block.startsWith('data: ') || block.includes('\n')) throw new Error(`not an SSE data event: ${JSON.stringify(block.slice(0, 120))}`);
    const json = block.slice(6);
    const event = JSON.parse(json) as StreamEvent;
    if (JSON.stringify(event) !== json) throw new Error(`event JSON is not compact: ${json.slice(0, 120)}`);
    events.push(event);
  }
  const terminals = events.filter((e) => e.type === 'done' || e.type === 'error');
  if (terminals.length !== 1) throw new Error(`expected exactly one terminal event, got ${terminals.length}`);
  if (events[events.length - 1] !== terminals[0]) throw new Error('events follow the terminal event');
  let joined = '';
  for (const e of events.slice(0, -1)) {
    if (e.type !== 'token' || typeof e.delta !== 'string' || e.delta === '' || Object.keys(e).length !== 2) {
      throw new Error(`bad token event: ${JSON.stringify(e)}`);
    }
    joined += e.delta;
  }
  const last = events[events.length - 1];
  if (last.type === 'done' && last.content !== joined) throw new Error('done.content is not the deltas joined');
  if (last.type === 'error' && (typeof last.message !== 'string' || last.message === '')) throw new Error('error event without a message');
  return events;
}

export interface RawReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One request; resolves with whatever arrived (a body cut short resolves too, flagged by the
 * caller's checks). An answer that arrived counts even if the relay then closed the socket while
 * the body was still being sent (how a 413 arrives). `headers` may be a flat raw list, which can
 * repeat a header.
 */
export function request(
  url: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string> | string[]; body?: string | Buffer; agent?: Agent | false; timeoutMs?: number } = {},
): Promise<RawReply> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(
      { host: u.hostname, port: u.port, path, method: opts.method ?? 'GET', headers: opts.headers as never, agent: opts.agent ?? false },
      (res) => {
        answered = true;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
        res.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`${opts.method ?? 'GET'} ${path} timed out`)), opts.timeoutMs ?? 20_000);
    req.on('error', (err) => {
      if (answered) return;
      clearTimeout(timer);
      reject(err);
    });
    req.end(opts.body);
  });
}

export const chatRequestBody = (content = 'Hello') => JSON.stringify({ messages: [{ role: 'user', content }] });

export function chatHeaders(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls until `check` holds, or throws after `timeoutMs` with what it last saw. */
export async function waitFor<T>(what: string, probe: () => T | Promise<T>, check: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await probe();
  while (!check(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)} after ${timeoutMs} ms`);
    await sleep(25);
    last = await probe();
  }
  return last;
}

/** Counts of this process's live libuv resources by kind (sockets, servers, timers, …). */
export function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/** True when no kind of resource is above its baseline count. */
export function atOrBelow(now: Record<string, number>, baseline: Record<string, number>): boolean {
  return Object.entries(now).every(([kind, n]) => n <= (baseline[kind] ?? 0));
}

let gcFn: (() => void) | undefined;
/** A full garbage collection, so memory figures show what is held rather than what is not yet collected. */
export function collectGarbage(): void {
  if (!gcFn) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
}

/** Bytes this process holds after a full GC: JS heap plus buffers outside it. */
export function heldBytes(): number {
  // Twice: V8 frees the backing stores of unreachable ArrayBuffers (Buffers) by a sweep that
  // finishes after the collection; the next collection completes it. After one, 16 MiB of
  // Buffers let go still counted as held.
  collectGarbage();
  collectGarbage();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

export interface RelayChild {
  url: string;
  token: string;
  pid: number;
  /** Resident set size of the child, from /proc. */
  rss(): number;
  /** The child's process.memoryUsage() right after a full GC. */
  memory(): Promise<NodeJS.MemoryUsage>;
  stop(): Promise<void>;
}

/** Runs test/reliability/relayChild.ts in a process of its own, with gc() for memory(). */
export interface RelayChildOptions {
  providerUrl: string;
  model: string;
  maxStreams?: number;
  keepAliveMs?: number;
  bodyTimeoutMs?: number;
  /** More options for the child's node (V8 flags). */
  nodeArgs?: string[];
}

export async function spawnRelayChild({ nodeArgs = [], ...opts }: RelayChildOptions): Promise<RelayChild> {
  const { join } = await import('node:path');
  const { readFileSync } = await import('node:fs');
  const proc = await spawnBundledChild({ entry: join(__dirname, 'relayChild.ts'), arg: opts, bundlePrefix: 'deskrelay-child-bundle-', nodeArgs: ['--expose-gc', ...nodeArgs], stderr: 'inherit' });
  const nextLine = (what: string) => proc.nextLine(10_000, () => new Error(`relay child: no ${what} within 10 s`));
  const first = JSON.parse(await nextLine('start line')) as { url: string; token: string; pid: number };
  return {
    ...first,
    async memory() {
      proc.send('mem');
      return JSON.parse(await nextLine('memory report')) as NodeJS.MemoryUsage;
    },
    rss: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${first.pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024,
    stop: () => proc.stop(),
  };
}

/**
 * For one suite: the provider `startProvider` starts and a relay child chatting with it, handed to
 * `started` before the tests; both stopped after them. `respawn()` replaces the child with a fresh
 * one (the one stopped after the suite).
 */
export function relayChildSuite<P extends { url: string; close(): Promise<void> }>(
  startProvider: () => Promise<P>,
  opts: Omit<RelayChildOptions, 'providerUrl'>,
  started: (s: { provider: P; relay: RelayChild }) => void,
): { respawn(): Promise<RelayChild> } {
  let provider: P | undefined;
  let relay: RelayChild | undefined;
  beforeAll(async () => {
    provider = await startProvider();
    relay = await spawnRelayChild({ ...opts, providerUrl: provider.url });
    started({ provider, relay });
  }, 30_000);
  afterAll(async () => {
    await relay?.stop();
    await provider?.close();
  });
  return {
    async respawn() {
      await relay?.stop();
      relay = await spawnRelayChild({ ...opts, providerUrl: provider!.url });
      return relay;
    },
  };
}
