/**
 * Issue 7, leaks: after every burst (healthy streams, failing providers, aborted clients) the
 * process's sockets, servers and timers (SSE keep-alives included) return to their baseline,
 * and 10,000 sequential streams grow a relay process's RSS by under 10%.
 */
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { startRelay, type TestRelay } from '../helpers/relay';
import { type FaultMode, type FaultProvider, startFaultProvider } from './faultProvider';
import { atOrBelow, chatHeaders, chatRequestBody, request, resources, sleep, spawnRelayChild, strictEvents, waitFor } from './support';

let t: TestRelay;
let p: FaultProvider;

beforeAll(async () => {
  p = await startFaultProvider();
  // Short keep-alive interval, so streams have live keep-alive timers while they run.
  t = await startRelay({ maxConcurrentStreams: () => 500, keepAliveMs: 30, providerIdleMs: 300 });
  t.useProvider({ id: 'faulty', kind: 'ollama', baseUrl: p.url, model: 'm' });
});
afterAll(async () => {
  await t?.close();
  await p?.close();
});

const relayConnections = () => new Promise<number>((resolve, reject) => t.relay.httpServer!.getConnections((err, n) => (err ? reject(err) : resolve(n))));

function stream(abortAfterMs?: number): Promise<string> {
  const u = new URL(t.url);
  return new Promise((resolve) => {
    let body = '';
    const req = httpRequest({ host: u.hostname, port: u.port, path: '/v1/chat/stream', method: 'POST', agent: false, headers: chatHeaders(t.token) }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('error', () => resolve(body));
    req.on('close', () => resolve(body));
    if (abortAfterMs !== undefined) setTimeout(() => req.destroy(), abortAfterMs);
    req.end(chatRequestBody());
  });
}

describe('leaks', () => {
  let baseline: Record<string, number>;

  it('takes a baseline after a warm-up stream', async () => {
    p.mode = 'ok';
    strictEvents(await stream());
    await waitFor('relay connections', relayConnections, (n) => n === 0, 10_000);
    // Let anything the warm-up left behind (an undici spare connection lives 4 s) go away.
    await waitFor('resources to settle', async () => {
      const before = JSON.stringify(resources());
      await sleep(500);
      return before === JSON.stringify(resources()) && !resources().TCPSocketWrap;
    }, Boolean, 15_000);
    baseline = resources();
    expect(baseline.TCPServerWrap).toBeGreaterThanOrEqual(2);
  }, 30_000);

  const bursts: [string, FaultMode, (i: number) => number | undefined][] = [
    ['healthy streams with keep-alives', 'ok', () => undefined],
    ['provider resets', 'reset', () => undefined],
    ['provider stalls past the idle limit', 'stall', () => undefined],
    ['garbage from the provider', 'garbage-wire', () => undefined],
    ['clients aborting mid-stream', 'ok', (i) => 20 + (i % 7) * 25],
  ];
  for (const [name, mode, abortAt] of bursts) {
    it(`after 200 concurrent ${name}, handles, sockets and timers return to the baseline`, async () => {
      p.mode = mode;
      p.lines = 6;
      p.delayMs = 40;
      const bodies = await Promise.all(Array.from({ length: 200 }, (_, i) => stream(abortAt(i))));
      if (abortAt(0) === undefined) for (const body of bodies) strictEvents(body);
      if (mode === 'ok' && abortAt(0) === undefined) expect(bodies.some((b) => b.includes(': \n\n'))).toBe(true);
      await waitFor('live streams', () => t.relay.activeStreams, (n) => n === 0, 10_000);
      await waitFor('relay connections', relayConnections, (n) => n === 0, 10_000);
      await waitFor('provider requests', () => p.openRequests, (n) => n === 0, 10_000);
      await waitFor('handles, sockets and timers vs baseline', resources, (now) => atOrBelow(now, baseline), 15_000);
    }, 60_000);
  }
});

describe('10,000 sequential streams', () => {
  let ollama: OllamaStandIn;
  beforeAll(async () => {
    ollama = await startOllamaStandIn({ reply: ['Hel', 'lo', ' 🌍'] });
  });
  afterAll(async () => {
    await ollama?.close();
  });

  it('grow a relay process\'s RSS by under 10%', async () => {
    // The young generation at its full size from the start (16 MiB semi-spaces, V8's maximum on
    // 64-bit): V8 otherwise doubles it once, when depends on how much each stream leaves behind,
    // and a relay that allocates less per stream took that step after the warm-up below (RSS
    // 97 → 107 MiB at once, then flat; heap in use flat): a step, not a leak.
    const child = await spawnRelayChild({ providerUrl: ollama.url, model: 'm', nodeArgs: ['--min-semi-space-size=16', '--max-semi-space-size=16'] });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const run = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const reply = await request(child.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(child.token), body: chatRequestBody(`n${i}`), agent });
          if (reply.status !== 200 || !reply.body.endsWith('data: {"type":"done","content":"Hello 🌍"}\n\n')) {
            throw new Error(`stream ${i}: ${reply.status} ${reply.body.slice(-120)}`);
          }
        }
      };
      const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
      // RSS right after a full GC in the child, every 1000 streams. One reading swings by ±10% with
      // V8's heap sizing and the allocator (no trend: seen flat over 16,000 streams), so the
      // comparison is of medians of three readings: the settled warm-up against the end of the run.
      const sample = async () => {
        const m = await child.memory();
        return { rss: child.rss(), heap: m.heapUsed };
      };
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      // Warm up until V8 has settled its heap: the young generation doubles once in its own time
      // (after 1,000 streams or after 3,000, depending on how much each stream leaves behind), a
      // one-off step in RSS that is not a leak. Measure only from a settled heap.
      // Settled means the heap's size held still over three rounds in a row: V8 may grow its
      // old and code spaces in more than one step (optimising compilers tier up after thousands
      // of requests), each a one-off step too (heap in use stays flat).
      await run(4_000);
      let settledTotal = 0;
      let still = 0;
      for (let k = 0; k < 24 && still < 3; k++) {
        await run(500);
        const total = (await child.memory()).heapTotal;
        still = total === settledTotal ? still + 1 : 0;
        settledTotal = total;
      }
      const warm: { rss: number; heap: number }[] = [];
      for (let k = 0; k < 3; k++) {
        await run(500);
        warm.push(await sample());
      }
      ollama.requests.length = 0;
      const during: { rss: number; heap: number }[] = [];
      for (let k = 0; k < 10; k++) {
        await run(1_000);
        ollama.requests.length = 0;
        during.push(await sample());
      }
      const before = { rss: median(warm.map((s) => s.rss)), heap: median(warm.map((s) => s.heap)) };
      const after = { rss: median(during.slice(-3).map((s) => s.rss)), heap: median(during.slice(-3).map((s) => s.heap)) };
      const growth = (after.rss - before.rss) / before.rss;
      console.log(
        `10,000 sequential streams: relay RSS ${mib(before.rss)} → ${mib(after.rss)} (${(growth * 100).toFixed(1)}%), ` +
          `heap in use ${mib(before.heap)} → ${mib(after.heap)}; readings ${during.map((s) => (s.rss / 2 ** 20).toFixed(0)).join(' ')} MiB`,
      );
      expect(growth).toBeLessThan(0.1);
      // The live heap is the sharper leak signal: under 100 bytes held per stream.
      expect(after.heap - before.heap).toBeLessThan(10_000 * 100);
    } finally {
      agent.destroy();
      await child.stop();
    }
  }, 180_000);
});
