/**
 * The relay serves the page compressed (issue 24): the build's brotli and gzip copies, chosen by
 * the request's Accept-Encoding, the same bytes once decoded; the API, and its SSE streams above
 * all, are never compressed (a compressing layer would hold tokens back until a block fills).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDesk, type Desk } from './harness';

let desk: Desk;
beforeAll(async () => {
  desk = await startDesk({ mode: 'normal' });
});
afterAll(async () => {
  await desk?.close();
});

const WEB = join(__dirname, '..', '..', 'media', 'web');

interface Got {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(path: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<Got> {
  const url = new URL(path, desk.relay.url);
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Brotli when asked, else gzip, else as it is: the same bytes each way, with the page's headers. */
async function servedCompressed(path: string, file: string): Promise<void> {
  const raw = readFileSync(join(WEB, file));
  const br = await get(path, { 'Accept-Encoding': 'gzip, deflate, br' });
  expect(br.status).toBe(200);
  expect(br.headers['content-encoding']).toBe('br');
  expect(String(br.headers.vary)).toMatch(/Accept-Encoding/i);
  expect(br.headers['content-security-policy']).toContain("default-src 'none'");
  expect(brotliDecompressSync(br.body).equals(raw)).toBe(true);
  // Halved, unless the file is too small for that (a chunk of esbuild's helpers is ~430 bytes).
  if (raw.length > 1024) expect(br.body.length).toBeLessThan(raw.length / 2);
  else expect(br.body.length).toBeLessThan(raw.length);

  const gz = await get(path, { 'Accept-Encoding': 'gzip' });
  expect(gz.headers['content-encoding']).toBe('gzip');
  expect(gunzipSync(gz.body).equals(raw)).toBe(true);

  const plain = await get(path, {});
  expect(plain.headers['content-encoding']).toBeUndefined();
  expect(plain.body.equals(raw)).toBe(true);
}

describe('the page, compressed', () => {
  for (const [path, file] of [['/', 'index.html'], ['/app.js', 'app.js'], ['/app.css', 'app.css'], ['/vendor/highlight.js', 'vendor/highlight.js']] as const) {
    it(`${path}: brotli when asked, else gzip, else as it is — the same bytes, with the page's headers`, async () => {
      await servedCompressed(path, file);
    });
  }

  it('every chunk (the code shared with the agent and voice, and theirs, fetched on first use) is served compressed too', async () => {
    const chunks = readdirSync(join(WEB, 'chunks')).filter((f) => f.endsWith('.js'));
    // The shared code, the agent's screens and voice at least.
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    expect(chunks.some((f) => f.startsWith('screen-'))).toBe(true);
    expect(chunks.some((f) => f.startsWith('voiceChat-'))).toBe(true);
    for (const f of chunks) await servedCompressed(`/chunks/${f}`, `chunks/${f}`);
  });

  it('never compresses the API: neither a JSON answer nor a reply stream (SSE)', async () => {
    const auth = { Authorization: `Bearer ${desk.relay.token}`, 'Accept-Encoding': 'gzip, deflate, br' };
    const info = await get('/v1/remote/info', auth);
    expect(info.status).toBe(200);
    expect(info.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(info.body.toString()).service).toBe('deskrelay');

    desk.ollama.set({ mode: 'normal', reply: ['Plain', ' text.'] });
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] });
    for (const extra of [{}, { 'Idempotency-Key': 'compress-check-0001' }] as Record<string, string>[]) {
      const sse = await get('/v1/chat/stream', { ...auth, ...extra, 'Content-Type': 'application/json', Accept: 'text/event-stream' }, 'POST', body);
      expect(sse.status).toBe(200);
      expect(String(sse.headers['content-type'])).toMatch(/^text\/event-stream/);
      expect(sse.headers['content-encoding']).toBeUndefined();
      expect(sse.body.toString()).toContain('"type":"done"');
    }
  });
});
