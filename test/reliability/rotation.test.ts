/**
 * Issue 7, token rotation under load: streams and probes keep coming with the old token while
 * the relay restarts on the same port. From the moment the restart begins no old-token request
 * is served (a stream's 200 included); after it, every old-token request gets 401
 * auth.invalid_token, and new-token requests are served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { type FaultProvider, startFaultProvider } from './faultProvider';
import { chatHeaders, chatRequestBody, request, sleep, strictEvents, waitFor } from './support';

let t: TestRelay;
let p: FaultProvider;

beforeAll(async () => {
  p = await startFaultProvider('ok');
  p.lines = 10;
  p.delayMs = 20;
  t = await startRelay({ port: await closedPort(), maxConcurrentStreams: () => 200 });
  t.useProvider({ id: 'faulty', kind: 'ollama', baseUrl: p.url, model: 'm' });
});
afterAll(async () => {
  await t?.close();
  await p?.close();
});

interface Outcome {
  token: 'old' | 'new';
  path: string;
  sentAt: number;
  /** When the status line arrived (undefined: refused or reset before any answer). */
  answeredAt?: number;
  status?: number;
  code?: string;
  terminal?: string;
  failure?: string;
}

describe('token rotation under load', () => {
  it('after a restart every old-token request gets 401 and no stream is served with a stale token', async () => {
    const oldToken = t.token;
    const url = t.url;
    const outcomes: Outcome[] = [];
    let running = true;
    let newToken: string | undefined;

    const one = async (which: 'old' | 'new', path: string): Promise<void> => {
      const token = which === 'old' ? oldToken : newToken!;
      const o: Outcome = { token: which, path, sentAt: performance.now() };
      outcomes.push(o);
      try {
        const reply = await request(url, path, {
          method: path === '/v1/chat/stream' ? 'POST' : 'GET',
          headers: chatHeaders(token),
          body: path === '/v1/chat/stream' ? chatRequestBody() : undefined,
        });
        // `request` resolves at the end of the body; the headers arrived no later than that.
        o.answeredAt = performance.now();
        o.status = reply.status;
        if (reply.status === 200 && path === '/v1/chat/stream') {
          o.terminal = strictEvents(reply.body).at(-1)!.type;
        } else if (reply.status !== 200) o.code = JSON.parse(reply.body).error?.code;
      } catch (err) {
        o.failure = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      }
    };
    const loop = async (which: 'old' | 'new', path: string) => {
      for (let i = 0; running && i < 10_000; i++) {
        if (which === 'new' && newToken === undefined) {
          await sleep(10);
          continue;
        }
        await one(which, path);
        // A refused connection returns at once; do not spin.
        if (outcomes.at(-1)?.failure) await sleep(5);
      }
    };

    const loops = [
      ...Array.from({ length: 30 }, () => loop('old', '/v1/chat/stream')),
      ...Array.from({ length: 10 }, () => loop('old', '/v1/remote/info')),
      ...Array.from({ length: 10 }, () => loop('new', '/v1/chat/stream')),
    ];
    // Counts, not sleeps: a busy machine serves fewer streams per second, never fewer in total.
    await waitFor('old-token streams served before the restart', () => outcomes.filter((o) => o.token === 'old' && o.terminal === 'done').length, (n) => n > 20, 20_000);
    const stopBegan = performance.now();
    await t.relay.stop();
    await t.relay.start();
    const restarted = performance.now();
    newToken = t.relay.token;
    await waitFor(
      'requests after the restart',
      () => [outcomes.filter((o) => o.token === 'old' && o.sentAt > restarted && o.status !== undefined).length, outcomes.filter((o) => o.token === 'new' && o.terminal !== undefined).length],
      ([old, fresh]) => old > 50 && fresh > 10,
      20_000,
    );
    running = false;
    await Promise.all(loops);

    expect(newToken).toBeDefined();
    expect(newToken).not.toBe(oldToken);
    expect(t.relay.url).toBe(url);

    const old = outcomes.filter((o) => o.token === 'old');
    const beforeStop = old.filter((o) => o.answeredAt !== undefined && o.answeredAt < stopBegan);
    const afterRestart = old.filter((o) => o.sentAt > restarted);
    // Load really was served before, and really was refused after.
    expect(beforeStop.filter((o) => o.status === 200 && o.terminal === 'done').length).toBeGreaterThan(20);
    expect(afterRestart.length).toBeGreaterThan(50);

    // Whatever was sent after the restart with the old token: 401 auth.invalid_token, every time.
    for (const o of afterRestart) expect({ status: o.status, code: o.code, failure: o.failure }).toEqual({ status: 401, code: 'auth.invalid_token', failure: undefined });
    // No old-token request sent once the restart began was served.
    for (const o of old.filter((x) => x.sentAt >= stopBegan)) expect(o.status).not.toBe(200);
    // Old-token streams in flight when the restart began ended with their one terminal event (done, or error: stopping).
    for (const o of old.filter((x) => x.status === 200 && x.path === '/v1/chat/stream')) expect(['done', 'error']).toContain(o.terminal);
    // During the restart: refused connections, 503 server.stopping or 401, never anything else.
    for (const o of old.filter((x) => x.sentAt >= stopBegan && x.sentAt <= restarted)) {
      if (o.status === undefined) expect(o.failure).toMatch(/ECONNREFUSED|ECONNRESET|socket hang up/);
      else expect([401, 503]).toContain(o.status);
    }
    // The new token is served.
    const fresh = outcomes.filter((o) => o.token === 'new');
    expect(fresh.length).toBeGreaterThan(10);
    for (const o of fresh) expect({ status: o.status, terminal: o.terminal }).toEqual({ status: 200, terminal: 'done' });
  }, 60_000);
});
