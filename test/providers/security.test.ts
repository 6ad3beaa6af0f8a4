/**
 * Issue 18, the provider findings, each through a real HTTP stand-in on loopback:
 *   #2 a provider cannot grow our memory: one NDJSON line, one SSE event and one JSON body are
 *      capped at 1 MiB; past a cap the reply fails naming the provider and the provider's
 *      connection is destroyed;
 *   #4 no fragment of the API key in a message: redacted before cutting, in its URL-encoded,
 *      base64 and JSON-escaped forms, and any long run of its start;
 *   #6 credentials in the base URL (user:password@, ?api-key=…) appear in no label or message.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { clearModelCache, createAdapter, describeProvider, ProviderError } from '../../server/src/providers';
import { redact } from '../../server/src/providers/errors';
import { startOpenAiStandIn } from '../fixtures/providers/openai';
import { startStandIn, type StandIn } from '../fixtures/providers/standin';
import { deps, FAKE_KEY, run, within } from './helpers';

const MiB = 1024 * 1024;
let server: StandIn | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Writes `total` bytes of `fill` in 64 KiB writes, waiting for drain; stops when the client left. */
async function endless(res: ServerResponse, fill: string, total: number): Promise<number> {
  const piece = fill.repeat(Math.ceil((64 * 1024) / fill.length)).slice(0, 64 * 1024);
  let sent = 0;
  while (sent < total && !res.destroyed) {
    sent += piece.length;
    if (!res.write(piece)) await new Promise((r) => res.once('drain', r).once('close', r));
  }
  return sent;
}

describe('#2 framing caps', () => {
  it('an NDJSON line longer than 1 MiB fails the reply, naming the provider, and drops the connection', async () => {
    let sent = 0;
    server = await startStandIn(async (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
      res.write('{"model":"m","created_at":"2025-06-05T10:11:12Z","message":{"role":"assistant","content":"ok"},"done":false}\n');
      sent = await endless(res, '{"model":"m","message":{"content":"', 64 * MiB);
    });
    const out = await within(run(createAdapter({ id: 'x', kind: 'ollama', baseUrl: server.url, model: 'm' }, deps())), 10_000, 'the capped reply');
    expect(out.text).toBe('ok');
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`Ollama at ${server.url} sent a line longer than 1 MiB`);
    await within(server.lastRequestClosed, 2_000, 'the provider connection closing');
    expect(server.lastRequestAborted).toBe(true);
    // Read no further than the cap plus what was in flight.
    expect(sent).toBeLessThan(16 * MiB);
  });

  it('an SSE event longer than 1 MiB fails the reply the same way', async () => {
    server = await startStandIn(async (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n');
      // A data field that never ends with its blank line (data: lines keep coming).
      await endless(res, 'data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n', 64 * MiB);
    });
    const url = `${server.url}/v1`;
    const out = await within(run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: url, model: 'm' }, deps())), 10_000, 'the capped reply');
    expect(out.text).toBe('ok');
    expect(out.error!.message).toBe(`OpenAI-compatible server at ${url} sent an event longer than 1 MiB`);
    await within(server.lastRequestClosed, 2_000, 'the provider connection closing');
    expect(server.lastRequestAborted).toBe(true);
  });

  it('a model list longer than 1 MiB fails, naming the provider, and drops the connection', async () => {
    server = await startStandIn(async (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
      res.write('{"models":[');
      await endless(res, '{"name":"llama3.2:latest"},', 64 * MiB);
    });
    clearModelCache();
    const out = await within(run(createAdapter({ id: 'x', kind: 'ollama', baseUrl: server.url, model: 'auto' }, deps())), 10_000, 'the capped list');
    expect(out.error!.message).toBe(`Ollama at ${server.url} sent a JSON body longer than 1 MiB`);
    await within(server.lastRequestClosed, 2_000, 'the provider connection closing');
    expect(server.lastRequestAborted).toBe(true);
  });

  it('a long line under the cap still passes', async () => {
    const big = 'y'.repeat(900 * 1024);
    server = await startStandIn(async (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
      res.write(`{"model":"m","message":{"role":"assistant","content":"${big}"},"done":false}\n`);
      res.end('{"model":"m","message":{"role":"assistant","content":""},"done_reason":"stop","done":true}\n');
    });
    const out = await run(createAdapter({ id: 'x', kind: 'ollama', baseUrl: server.url, model: 'm' }, deps()));
    expect(out.error).toBeUndefined();
    expect(out.text).toBe(big);
  });
});

describe('#4 no fragment of the key', () => {
  const prefixes = (text: string, key: string) => {
    const found: string[] = [];
    for (let n = key.length; n >= 8; n--) if (text.includes(key.slice(0, n))) found.push(key.slice(0, n));
    return found;
  };

  it('a key straddling the 300-character cut of an error body leaves nothing of itself', async () => {
    const oa = await startOpenAiStandIn({ mode: 'http-error', status: 401, errorMessage: `${'x'.repeat(280)} {key} and more` });
    server = oa;
    const out = await run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: oa.url, model: 'm' }, deps({ key: FAKE_KEY })));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(prefixes(out.error!.message, FAKE_KEY)).toEqual([]);
    expect(out.error!.message).toContain('[redacted]');
  });

  it('a key straddling the 120-character snippet of a broken stream leaves nothing either', async () => {
    server = await startStandIn((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(`data: {"not json ${'z'.repeat(95)} ${FAKE_KEY}\n\n`);
    });
    const out = await run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: server.url, model: 'm' }, deps({ key: FAKE_KEY })));
    expect(out.error!.message).toMatch(/sent a reply that is not valid JSON/);
    expect(prefixes(out.error!.message, FAKE_KEY)).toEqual([]);
  });

  it('the key URL-encoded, base64, JSON-escaped, or cut short by the provider, is redacted too', async () => {
    const key = 'sk-test+DESKRELAY/LEAK"CANARY\\0123456789abcdef';
    const forms = [
      encodeURIComponent(key),
      Buffer.from(key).toString('base64'),
      JSON.stringify(key).slice(1, -1),
      `${key.slice(0, 14)}…`,
    ];
    const oa = await startOpenAiStandIn({ mode: 'mid-stream-error', errorMessage: `echo: ${forms.join(' | ')}` });
    server = oa;
    const out = await run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: oa.url, model: 'm' }, deps({ key })));
    const message = out.error!.message;
    for (const form of forms) expect(message).not.toContain(form.slice(0, 8));
    expect(message).toBe(`OpenAI-compatible server at ${oa.url} reported an error: echo: [redacted] | [redacted] | [redacted] | [redacted]…`);
  });

  it('characters 3-13 of the key, echoed by the provider, do not reach the phone (issue 21, finding 8)', async () => {
    const oa = await startOpenAiStandIn({ mode: 'http-error', status: 401, errorMessage: `Incorrect API key provided: ${FAKE_KEY.slice(3, 14)}. You can find your API key at https://platform.openai.com/account/api-keys.` });
    server = oa;
    const out = await run(createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl: oa.url, model: 'm' }, deps({ key: FAKE_KEY })));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toContain('Incorrect API key provided: [redacted]. You can find');
    for (let i = 0; i + 8 <= FAKE_KEY.length; i++) expect(out.error!.message).not.toContain(FAKE_KEY.slice(i, i + 8));
  });

  it('redact keeps text that merely shares a short start with the key', () => {
    expect(redact('sk-test is the prefix', FAKE_KEY)).toBe('sk-test is the prefix');
    expect(redact(`${FAKE_KEY.slice(0, 8)}`, FAKE_KEY)).toBe('[redacted]');
  });
});

describe('#6 credentials in the base URL', () => {
  it('describeProvider shows neither user:password nor the query string', () => {
    expect(describeProvider({ id: 'x', kind: 'openai-compatible', baseUrl: 'https://alice:s3cretpass@api.example.com/v1/?api-key=QUERYSECRET123' })).toBe(
      'OpenAI-compatible server at https://api.example.com/v1',
    );
    expect(describeProvider({ id: 'x', kind: 'ollama', baseUrl: 'http://127.0.0.1:11434' })).toBe('Ollama at http://127.0.0.1:11434');
  });

  it('no label or message carries them, while the provider still gets them', async () => {
    const oa = await startOpenAiStandIn({ mode: 'http-error', status: 500, errorMessage: 'upstream failed for s3cretpass QUERYSECRET123' });
    server = oa;
    const shown = oa.url;
    const baseUrl = oa.url.replace('http://', 'http://alice:s3cretpass@') + '?api-key=QUERYSECRET123';
    const adapter = createAdapter({ id: 'x', kind: 'openai-compatible', baseUrl, model: 'm' }, deps());
    expect(adapter.label).toBe(`OpenAI-compatible server at ${shown}`);
    const out = await run(adapter);
    expect(out.error!.message).toBe(`OpenAI-compatible server at ${shown} failed with a server error (HTTP 500: upstream failed for [redacted] [redacted])`);
    const req = oa.requests[0]!;
    expect(req.path).toBe('/v1/chat/completions?api-key=QUERYSECRET123');
    expect(req.headers.authorization).toBe(`Basic ${Buffer.from('alice:s3cretpass').toString('base64')}`);
  });

  it('an unreachable provider with credentials in its URL is named without them', async () => {
    const out = await run(createAdapter({ id: 'x', kind: 'ollama', baseUrl: 'http://bob:hunter22@deskrelay-no-such-host.invalid:11434/?token=QUERYSECRET123', model: 'm' }, deps()));
    expect(out.error!.message).toMatch(/^Ollama at http:\/\/deskrelay-no-such-host\.invalid:11434 is not reachable/);
    expect(out.error!.message).not.toMatch(/bob|hunter22|QUERYSECRET123/);
  });
});
