/**
 * Issue 7, fuzz: 10,000 generated requests (methods, paths, headers, bodies) in bursts over
 * keep-alive connections, plus raw malformed HTTP. Every answer is a CONTRACT error or a valid
 * stream, nothing crashes, and `/v1/health` answers after every burst.
 */
import { Agent } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { closedPort } from '../helpers/http';
import { startRelay, type TestRelay } from '../helpers/relay';
import { type FaultProvider, startFaultProvider } from './faultProvider';
import { type RawReply as Answer, request, strictEvents, waitFor } from './support';

const TOTAL = 10_000;
const BURST = 1_000;
const PARALLEL = 16;
const SEED = 20_250_607;

/** Every status a DeskRelay answer may have, with the codes each may carry (CONTRACT §3, plus the relay's 408/431 for slow or oversized requests). */
const CODES: Record<number, string[]> = {
  400: ['request.invalid_json', 'request.invalid_body', 'request.malformed'],
  401: ['auth.missing_token', 'auth.invalid_token'],
  404: ['route.not_found'],
  405: ['route.method_not_allowed'],
  408: ['request.timeout'],
  412: ['chat.no_provider'],
  413: ['request.body_too_large'],
  415: ['request.unsupported_media_type'],
  429: ['chat.too_many_streams'],
  431: ['request.malformed'],
  503: ['server.stopping', 'server.busy'],
};
const KNOWN: Record<string, string> = { '/v1/health': 'GET', '/v1/remote/info': 'GET', '/v1/chat/stream': 'POST' };
/** Headers the client library owns: generating them would test Node's client, not the relay. */
const RESERVED = new Set(['content-length', 'transfer-encoding', 'host', 'connection', 'expect', 'upgrade', 'te', 'trailer', 'keep-alive']);

const TOKEN: unique symbol = Symbol('token');
type AuthValue = string | typeof TOKEN | { prefix: string; suffix: string };

interface FuzzRequest {
  method: string;
  path: string;
  auth: AuthValue[];
  contentType: string | undefined;
  accept: string | undefined;
  extra: [string, string][];
  body: string | Uint8Array | undefined;
}

const segment = fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%-]{0,12}$/);
const pathArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...Object.keys(KNOWN)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...Object.keys(KNOWN)), fc.constantFrom('/', '?', '?x=1', '//', '/..', '%2F', '#frag', '?stream=true&a=%00', '.json'))
      .map(([p, s]) => p + s),
  },
  { weight: 2, arbitrary: fc.array(segment, { maxLength: 5 }).map((s) => `/${s.join('/')}`) },
  { weight: 1, arbitrary: fc.constantFrom('/', '/v1', '/v1/', '/V1/HEALTH', '/v1/chat', '/v1/chat/stream/x', '/v2/chat/stream', '//v1/health') },
);
const methodArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('GET', 'POST') },
  { weight: 2, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS') },
  { weight: 1, arbitrary: fc.constantFrom('PROPFIND', 'SEARCH', 'PURGE', 'LOCK', 'REPORT', 'MKCOL', 'COPY', 'MOVE', 'TRACE', 'QUERY') },
);
const visible = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,40}[\x21-\x7e])?$/);
const authArb: fc.Arbitrary<AuthValue> = fc.oneof(
  { weight: 8, arbitrary: fc.constant(TOKEN) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      { prefix: 'bearer ', suffix: '' },
      { prefix: 'BEARER ', suffix: '' },
      { prefix: 'Bearer   ', suffix: '  ' },
      { prefix: 'Bearer ', suffix: 'x' },
      { prefix: 'Bearer x', suffix: '' },
      { prefix: 'Basic ', suffix: '' },
      { prefix: 'Bearer\t', suffix: '' },
    ),
  },
  { weight: 2, arbitrary: fc.constantFrom('', 'Bearer', 'Bearer ', 'Bearer dr_', 'Token abc', 'Bearer dr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA') },
  { weight: 1, arbitrary: visible },
);
const auths: fc.Arbitrary<AuthValue[]> = fc.oneof(
  { weight: 2, arbitrary: fc.constant<AuthValue[]>([]) },
  { weight: 10, arbitrary: authArb.map((a): AuthValue[] => [a]) },
  { weight: 1, arbitrary: fc.array(authArb, { minLength: 2, maxLength: 3 }) },
);
const contentTypeArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'Application/JSON ; charset=UTF-8') },
  { weight: 2, arbitrary: fc.constantFrom('text/plain', 'application/jsonx', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '') },
  { weight: 1, arbitrary: visible },
);
const extraArb = fc.array(
  fc.tuple(
    fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,15}$/).filter((n) => !RESERVED.has(n.toLowerCase()) && n.toLowerCase() !== 'authorization' && n.toLowerCase() !== 'content-type'),
    fc.oneof(visible, fc.constant('')),
  ),
  { maxLength: 4 },
);
const role = fc.oneof({ weight: 8, arbitrary: fc.constantFrom('system', 'user', 'assistant') }, { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null)) });
const content = fc.oneof({ weight: 8, arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });
const message = fc.record({ role, content }, { requiredKeys: [] });
const bodyArb: fc.Arbitrary<string | Uint8Array | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 8, arbitrary: fc.array(fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: fc.string({ maxLength: 40 }) }), { minLength: 1, maxLength: 4 }).map((messages) => JSON.stringify({ messages })) },
  { weight: 3, arbitrary: fc.record({ messages: fc.array(message, { maxLength: 4 }), extra: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }).map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? '') },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 400 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '{', '{"messages":', '{"messages":[]}', '{"messages":[{"role":"user","content":"x"}]', 'null', '[]', '\uFEFF{"messages":[{"role":"user","content":"bom"}]}') },
  // Over the 1 MiB limit now and then.
  { weight: 1, arbitrary: fc.integer({ min: 1024 * 1024 + 1, max: 1024 * 1024 + 4096 }).map((n) => JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(n) }] })) },
);
const requestArb: fc.Arbitrary<FuzzRequest> = fc.record({
  method: methodArb,
  path: pathArb,
  auth: auths,
  contentType: contentTypeArb,
  accept: fc.constantFrom(undefined, 'text/event-stream', '*/*', 'application/json'),
  extra: extraArb,
  body: bodyArb,
});

function headerList(r: FuzzRequest, token: string, host = '127.0.0.1'): string[] {
  // Raw header lists get no automatic Host header; every real client sends one.
  const list: [string, string][] = [['Host', host]];
  for (const a of r.auth) list.push(['Authorization', a === TOKEN ? `Bearer ${token}` : typeof a === 'string' ? a : `${a.prefix}${token}${a.suffix}`]);
  if (r.contentType !== undefined) list.push(['Content-Type', r.contentType]);
  if (r.accept !== undefined) list.push(['Accept', r.accept]);
  list.push(...r.extra);
  // Node frames a GET/DELETE/OPTIONS body only when told its length; unframed bytes would poison the keep-alive connection.
  if (r.body !== undefined) list.push(['Content-Length', String(Buffer.byteLength(r.body as never))]);
  return list.flat();
}

/** Sends one request on the shared keep-alive agent. */
function fire(url: URL, agent: Agent, r: FuzzRequest, token: string): Promise<Answer> {
  const body = r.body === undefined ? undefined : Buffer.from(r.body as never);
  return request(url.origin, r.path, { method: r.method, headers: headerList(r, token), body, agent, timeoutMs: 15_000 });
}

/** The oracle: what any answer to any request must look like. Returns a problem, or undefined. */
function problem(r: FuzzRequest, a: Answer): string | undefined {
  const id = a.headers['x-request-id'];
  if (typeof id !== 'string' || !/^[0-9a-f]{32}$/.test(id)) return `missing or bad X-Request-Id: ${String(id)}`;
  const bare = r.path.split('?')[0].split('#')[0];
  const api = bare === '/v1' || bare.startsWith('/v1/');
  // Outside /v1 a GET or HEAD may be the phone web client's static files.
  if (!api && (r.method === 'GET' || r.method === 'HEAD') && (a.status === 200 || a.status === 304)) return undefined;
  // The health probe answers HEAD like GET, without a body.
  if (r.method === 'HEAD' && bare === '/v1/health') return a.status === 200 && a.body === '' ? undefined : `HEAD /v1/health got ${a.status}`;
  if (a.status === 200) {
    if (KNOWN[bare] !== r.method) return `200 for ${r.method} ${r.path}`;
    if (bare === '/v1/chat/stream') {
      if (a.headers['content-type'] !== 'text/event-stream; charset=utf-8') return `stream with content-type ${a.headers['content-type']}`;
      try {
        strictEvents(a.body);
      } catch (err) {
        return `invalid stream: ${(err as Error).message}`;
      }
      return undefined;
    }
    const json = JSON.parse(a.body) as Record<string, unknown>;
    if (bare === '/v1/health') return json.status === 'ok' ? undefined : `health said ${a.body}`;
    const keys = Object.keys(json).sort().join(',');
    return keys === 'hostname,providerConfigured,service,version,workspaces' ? undefined : `info fields ${keys}`;
  }
  const codes = CODES[a.status];
  if (!codes) return `status ${a.status} is not a CONTRACT status`;
  if (r.method === 'HEAD') return a.status === 405 || (a.status === 404 && !KNOWN[bare]) ? undefined : `HEAD got ${a.status}`;
  if (a.headers['content-type'] !== 'application/json; charset=utf-8') return `error with content-type ${a.headers['content-type']}`;
  let body: { error?: { code?: unknown; message?: unknown; request_id?: unknown } };
  try {
    body = JSON.parse(a.body);
  } catch {
    return `error body is not JSON: ${a.body.slice(0, 80)}`;
  }
  const e = body.error;
  if (!e || Object.keys(body).length !== 1) return `not the CONTRACT error body: ${a.body.slice(0, 120)}`;
  if (!codes.includes(String(e.code))) return `${a.status} with code ${String(e.code)}`;
  if (typeof e.message !== 'string' || e.message === '') return 'error without a message';
  if (e.request_id !== id) return 'error.request_id differs from X-Request-Id';
  if (!KNOWN[bare] && a.status !== 404) return `${a.status} for unknown path ${r.path}`;
  if (KNOWN[bare] && KNOWN[bare] !== r.method && a.status !== 405) return `${a.status} for ${r.method} on ${bare}`;
  if (a.status === 401 && a.headers['www-authenticate'] !== 'Bearer realm="deskrelay"') return '401 without WWW-Authenticate';
  if (/\/(home|root|tmp|work)\//.test(a.body) || /\bat \S+ \(|\.(ts|js):\d+/.test(a.body)) return `answer names a path or a stack: ${a.body.slice(0, 160)}`;
  return undefined;
}

let t: TestRelay;
let ollama: OllamaStandIn;
let faulty: FaultProvider;
let deadPort: number;

beforeAll(async () => {
  ollama = await startOllamaStandIn({ reply: ['Hel', 'lo ', '🌍'] });
  faulty = await startFaultProvider('garbage-body');
  deadPort = await closedPort();
  t = await startRelay({ bodyTimeoutMs: 5_000 });
});
afterAll(async () => {
  await t?.close();
  await ollama?.close();
  await faulty?.close();
});

/** What the active provider is during each burst: mostly a healthy one, sometimes none, the cloud, a dead port, a broken one. */
function providerFor(burst: number) {
  switch (burst % 5) {
    case 2:
      return t.setActive({ ok: false, reason: burst % 2 ? 'cloud' : 'none', id: 'deskrelay-cloud' });
    case 3:
      return t.useProvider({ id: 'dead', kind: 'ollama', baseUrl: `http://127.0.0.1:${deadPort}`, model: 'm' });
    case 4:
      return t.useProvider({ id: 'broken', kind: 'ollama', baseUrl: faulty.url, model: 'm' });
    default:
      return t.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'm' });
  }
}

describe('fuzz', () => {
  it(`${TOTAL} generated requests in bursts of ${BURST}: only CONTRACT answers, health after every burst`, async () => {
    const all = fc.sample(requestArb, { numRuns: TOTAL, seed: SEED });
    const url = new URL(t.url);
    const agent = new Agent({ keepAlive: true, maxSockets: PARALLEL });
    const statuses: Record<number, number> = {};
    const problems: string[] = [];
    try {
      for (let burst = 0; burst < TOTAL / BURST; burst++) {
        providerFor(burst);
        const batch = all.slice(burst * BURST, (burst + 1) * BURST);
        let next = 0;
        const worker = async () => {
          while (next < batch.length) {
            const r = batch[next++];
            let a: Answer;
            try {
              a = await fire(url, agent, r, t.token);
            } catch (err) {
              problems.push(`${r.method} ${r.path}: no answer (${(err as Error).message})`);
              continue;
            }
            statuses[a.status] = (statuses[a.status] ?? 0) + 1;
            const p = problem(r, a);
            if (p) problems.push(`${r.method} ${r.path} [${headerList(r, '<token>').join(' | ')}] → ${a.status}: ${p} ${a.body.slice(0, 200)}`);
          }
        };
        await Promise.all(Array.from({ length: PARALLEL }, worker));
        expect(problems.slice(0, 5), `burst ${burst}`).toEqual([]);
        const health = await request(t.url, '/v1/health');
        expect(health.status).toBe(200);
        expect(JSON.parse(health.body)).toMatchObject({ status: 'ok' });
      }
    } finally {
      agent.destroy();
    }
    console.log(`fuzz statuses: ${JSON.stringify(statuses)}`);
    // The generator reached every kind of answer, streams included.
    for (const status of [200, 400, 401, 404, 405, 412, 413, 415]) expect(statuses[status], `status ${status}: ${JSON.stringify(statuses)}`).toBeGreaterThan(0);
    expect(Object.values(statuses).reduce((a, b) => a + b, 0)).toBe(TOTAL);
    await waitFor('live streams', () => t.relay.activeStreams, (n) => n === 0, 5_000);
  }, 150_000);

  it('an HTTP/1.1 request without a Host header gets the CONTRACT 400 body, not Node\'s bare status line', async () => {
    const port = Number(new URL(t.url).port);
    const raw = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (text += d));
      socket.on('error', () => {});
      socket.on('close', () => resolve(text));
      socket.end('GET /v1/health HTTP/1.1\r\n\r\n');
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    const id = /\r\nX-Request-Id: ([0-9a-f]{32})\r\n/i.exec(raw)?.[1];
    expect(id).toBeDefined();
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'request.malformed', message: expect.stringContaining('Host'), request_id: id },
    });
  });

  it('raw malformed HTTP: a CONTRACT error body or a closed socket, never a crash', async () => {
    const token = t.token;
    const wire = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => Buffer.from(b)),
      fc
        .tuple(
          fc.constantFrom('GET', 'POST', 'G ET', 'BREW', 'CONNECT', '', 'POST /v1/chat/stream'),
          fc.constantFrom('/v1/health', '/v1/chat/stream', '*', 'http://127.0.0.1/', ' ', '/\u0000', '/v1/health HTTP/1.1 extra'),
          fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9', '', 'http/1.1'),
          fc.array(fc.constantFrom(`Authorization: Bearer ${token}`, 'Host: 127.0.0.1', 'Content-Length: 5', 'Content-Length: -1', 'Content-Length: 1, 2', 'Transfer-Encoding: chunked', 'Transfer-Encoding: gzip, chunked', 'X: \u0001', ' folded', 'NoColon', 'Content-Type: application/json'), { maxLength: 5 }),
          fc.constantFrom('', '{}', '5\r\nhello\r\n0\r\n\r\n', 'zz\r\n', '\u0000\u0001'),
        )
        .map(([m, p, v, hs, b]) => Buffer.from(`${m} ${p} ${v}\r\n${hs.join('\r\n')}${hs.length ? '\r\n' : ''}\r\n${b}`, 'latin1')),
    );
    const samples = fc.sample(wire, { numRuns: 400, seed: SEED });
    const port = Number(new URL(t.url).port);
    const bad: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < samples.length) {
        const bytes = samples[next++];
        const got = await new Promise<string>((resolve) => {
          const socket = connect(port, '127.0.0.1');
          let text = '';
          const timer = setTimeout(() => socket.destroy(), 1_500);
          socket.setEncoding('latin1');
          socket.on('data', (d: string) => (text += d));
          socket.on('error', () => {});
          socket.on('close', () => {
            clearTimeout(timer);
            resolve(text);
          });
          socket.end(bytes);
        });
        // Every response on the socket (a keep-alive may answer more than one request) must be a CONTRACT answer.
        for (const response of got.split(/(?=HTTP\/1\.1 \d{3} )/).filter((s) => s !== '')) {
          const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(response)?.[1]);
          const body = response.slice(response.indexOf('\r\n\r\n') + 4);
          if (status === 200) continue; // a request that happened to be valid (health)
          const code = /"code":"([^"]+)"/.exec(body)?.[1];
          if (!CODES[status] || !code || !CODES[status].includes(code)) bad.push(`${JSON.stringify(bytes.toString('latin1').slice(0, 80))} → ${response.slice(0, 200)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
    expect(bad.slice(0, 5)).toEqual([]);
    const health = await request(t.url, '/v1/health');
    expect(health.status).toBe(200);
  }, 60_000);
});
