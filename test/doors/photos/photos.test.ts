/**
 * Photos in chat requests (issue 13), through the real relay over HTTP: each provider kind's
 * stand-in receives them in its own wire form, every door takes the same shape (SPEC's stream,
 * resumable streams, the WebSocket, the OpenAI door's data URLs), and every limit holds.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { ProviderConfig } from '../../../server/src/providers/types';
import { startAnthropicStandIn } from '../../fixtures/providers/anthropic';
import { startGeminiStandIn } from '../../fixtures/providers/gemini';
import { startOllamaStandIn, type OllamaStandIn } from '../../fixtures/providers/ollama';
import { startOpenAiStandIn } from '../../fixtures/providers/openai';
import type { StandIn } from '../../fixtures/providers/standin';
import { bearer, chatHeaders, parseEvents, send } from '../../helpers/http';
import { type TestRelay } from '../../helpers/relay';
import { newKey, parseNumbered, resumeHeaders, relayWithOllama } from '../helpers';

const KEY = 'sk-test-photos-0123456789';
/** A 1×1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
/** A JPEG's first bytes (SOI, then an APP0 marker), then filler: the relay reads only the magic bytes. */
const JPEG_START = Buffer.from([0xff, 0xd8, 0xff, 0xe0]);
const JPEG = Buffer.concat([JPEG_START, Buffer.from('a photo of a cat, pretend it is a JPEG')]).toString('base64');
const MiB = 1024 * 1024;

const image = (data = PNG, mediaType = 'image/png') => ({ type: 'image', mediaType, data });
const text = (t: string) => ({ type: 'text', text: t });
/** Base64 of `bytes` decoded bytes. */
const base64Of = (bytes: number) => Buffer.concat([JPEG_START, Buffer.alloc(bytes - JPEG_START.length, 7)]).toString('base64');

const photoBody = (content: unknown[], extra: object[] = []) => JSON.stringify({ messages: [...extra, { role: 'user', content }] });

let t: TestRelay;
let ollama: OllamaStandIn;
relayWithOllama({ keys: { get: async () => KEY, howToSet: () => 'set it' }, keepAliveMs: 1_000 }, (s) => ({ t, ollama } = s), { model: 'llava' });
const lastChat = (s: StandIn) => s.requests.filter((r) => r.method === 'POST').at(-1)!;
const stream = (body: string | Buffer, headers = chatHeaders(t.token)) => send(t.url, '/v1/chat/stream', { method: 'POST', headers, body });
/** The OpenAI door with one user message of `content` parts. */
const completion = (content: unknown[]) =>
  send(t.url, '/v1/chat/completions', {
    method: 'POST',
    headers: { ...bearer(t.token), 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content }] }),
  });

describe('each provider kind receives photos in its own wire form', () => {
  const kinds: { kind: ProviderConfig['kind']; start(): Promise<StandIn>; config(url: string): ProviderConfig; check(s: StandIn): void }[] = [
    {
      kind: 'ollama',
      start: () => startOllamaStandIn(),
      config: (url) => ({ id: 'p', kind: 'ollama', baseUrl: url, model: 'llava' }),
      check(s) {
        // Ollama: `images: [base64]` on the message, the text in `content`.
        const body = lastChat(s).body;
        expect(body.messages).toEqual([
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'What is in these photos?', images: [PNG, JPEG] },
        ]);
      },
    },
    {
      kind: 'openai-compatible',
      start: () => startOpenAiStandIn(),
      config: (url) => ({ id: 'p', kind: 'openai-compatible', baseUrl: url, model: 'gpt-4o' }),
      check(s) {
        expect(lastChat(s).body.messages[1]).toEqual({
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${JPEG}` } },
            { type: 'text', text: 'What is in these photos?' },
          ],
        });
      },
    },
    {
      kind: 'anthropic',
      start: () => startAnthropicStandIn(),
      config: (url) => ({ id: 'p', kind: 'anthropic', baseUrl: url, model: 'claude-test' }),
      check(s) {
        const body = lastChat(s).body;
        expect(body.system).toBe('Be brief.');
        expect(body.messages).toEqual([
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
              { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: JPEG } },
              { type: 'text', text: 'What is in these photos?' },
            ],
          },
        ]);
      },
    },
    {
      kind: 'gemini',
      start: () => startGeminiStandIn(),
      config: (url) => ({ id: 'p', kind: 'gemini', baseUrl: url, model: 'gemini-test' }),
      check(s) {
        expect(lastChat(s).body.contents).toEqual([
          {
            role: 'user',
            parts: [
              { inline_data: { mime_type: 'image/png', data: PNG } },
              { inline_data: { mime_type: 'image/jpeg', data: JPEG } },
              { text: 'What is in these photos?' },
            ],
          },
        ]);
      },
    },
  ];

  it.each(kinds)('$kind', async (k) => {
    const s = await k.start();
    try {
      t.useProvider(k.config(s.url));
      const reply = await stream(
        photoBody([text('What is in these'), image(), text(' photos?'), image(JPEG, 'image/jpeg')], [{ role: 'system', content: 'Be brief.' }]),
      );
      expect(reply.status).toBe(200);
      expect(parseEvents(reply.body).at(-1).type).toBe('done');
      k.check(s);
      // The stand-in read them in its own form.
      expect(lastChat(s).images.map((i) => i.data)).toEqual([PNG, JPEG]);
    } finally {
      await s.close();
    }
  });

  it('Anthropic and Gemini merge consecutive user messages and keep each photo with its turn', async () => {
    const s = await startAnthropicStandIn();
    try {
      t.useProvider({ id: 'p', kind: 'anthropic', baseUrl: s.url, model: 'claude-test' });
      const body = JSON.stringify({
        messages: [
          { role: 'assistant', content: 'Send me a photo.' },
          { role: 'user', content: [image()] },
          { role: 'user', content: 'this one' },
          { role: 'assistant', content: 'A dot.' },
          { role: 'user', content: [text('and '), image(JPEG, 'image/jpeg')] },
        ],
      });
      expect((await stream(body)).status).toBe(200);
      const sent = lastChat(s).body.messages;
      expect(sent.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
      expect(sent[2].content).toEqual([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'text', text: 'this one' }]);
      expect(sent[4].content).toEqual([{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: JPEG } }, { type: 'text', text: 'and ' }]);
    } finally {
      await s.close();
    }
  });
});

describe('every door takes the same shape', () => {
  it('resumable streams', async () => {
    const reply = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: resumeHeaders(t.token, newKey()), body: photoBody([text('hi'), image()]) });
    expect(reply.status).toBe(200);
    expect(parseNumbered(reply.body).at(-1)!.event.type).toBe('done');
    expect(lastChat(ollama).images).toEqual([{ message: 0, data: PNG }]);
  });

  it('the WebSocket', async () => {
    const events = await socketChat(photoBody([text('hi'), image()]));
    expect(events.at(-1).type).toBe('done');
    expect(lastChat(ollama).body.messages).toEqual([{ role: 'user', content: 'hi', images: [PNG] }]);
  });

  it('the OpenAI door: image_url parts with data: URLs', async () => {
    const reply = await completion([{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${JPEG}`, detail: 'low' } }]);
    expect(reply.status).toBe(200);
    expect(lastChat(ollama).body.messages).toEqual([{ role: 'user', content: 'hi', images: [JPEG] }]);
  });

  it('the OpenAI door refuses a remote image URL (the desktop fetches nothing a phone names) and a bad data URL', async () => {
    const before = ollama.requests.length;
    for (const [url, wording] of [
      ['https://example.com/cat.jpg', /image_url\.url must be a data: URL.*does not fetch/],
      ['http://127.0.0.1:1/cat.jpg', /image_url\.url must be a data: URL/],
      ['data:image/jpeg,not-base64', /must be a base64 data: URL/],
      ['data:image/bmp;base64,AAAA', /media type must be one of image\/jpeg, image\/png, image\/webp, image\/gif/],
      ['data:image/png;base64,@@@@', /data is not valid base64/],
    ] as const) {
      const reply = await completion([{ type: 'image_url', image_url: { url } }]);
      expect(reply.status).toBe(400);
      expect(reply.json.error.code).toBe('invalid_value');
      expect(reply.json.error.message).toMatch(/^messages\[0\]\.content\[0\]\.image_url\.url/);
      expect(reply.json.error.message).toMatch(wording);
    }
    expect(ollama.requests.length).toBe(before);
  });
});

describe('limits and refusals', () => {
  const expectError = (reply: { status: number; json: any }, status: number, code: string, message?: RegExp) => {
    expect(reply.status).toBe(status);
    expect(reply.json.error.code).toBe(code);
    if (message) expect(reply.json.error.message).toMatch(message);
  };

  it('bad base64, another media type, an unknown part and an image outside a user message are 400 naming the field', async () => {
    const cases: [unknown[], RegExp][] = [
      [[image('not base64!')], /^messages\[0\]\.content\[0\]\.data is not valid base64/],
      [[text('x'), image(PNG, 'image/bmp')], /^messages\[0\]\.content\[1\]\.mediaType must be one of image\/jpeg, image\/png, image\/webp, image\/gif/],
      [[{ type: 'image', mediaType: 'image/png' }], /^messages\[0\]\.content\[0\]\.data must be the image as a base64 string/],
      [[{ type: 'audio', data: PNG }], /^messages\[0\]\.content\[0\]\.type must be "text" or "image"/],
      [[{ type: 'text', text: 3 }], /^messages\[0\]\.content\[0\]\.text must be a string/],
    ];
    for (const [content, message] of cases) {
      expectError(await stream(photoBody(content)), 400, 'request.invalid_body', message);
    }
    const fromAssistant = await stream(JSON.stringify({ messages: [{ role: 'assistant', content: [image()] }, { role: 'user', content: 'hi' }] }));
    expectError(fromAssistant, 400, 'request.invalid_body', /^messages\[0\]\.content\[0\] is an image in a assistant message/);
  });

  it('the bytes decide what an image is, on every door: bytes that are no JPEG, PNG, WebP or GIF are 400; a declared type the bytes contradict is sent as what they are (issue 21, finding 9)', async () => {
    const lmstudio = await startOpenAiStandIn();
    try {
      t.useProvider({ id: 'lms', kind: 'openai-compatible', baseUrl: lmstudio.url, model: 'm' });
      const before = lmstudio.requests.length;
      const notAnImage = Buffer.from('<svg onload=alert(1)> or any bytes at all').toString('base64');
      expectError(await stream(photoBody([text('x'), image(notAnImage, 'image/png')])), 400, 'request.invalid_body', /^messages\[0\]\.content\[1\]\.data is not a JPEG, PNG, WebP or GIF image/);
      const openai = await completion([{ type: 'image_url', image_url: { url: `data:image/gif;base64,${notAnImage}` } }]);
      expect(openai.status).toBe(400);
      expect(openai.json.error.message).toMatch(/^messages\[0\]\.content\[0\]\.image_url\.url's data is not a JPEG, PNG, WebP or GIF image/);
      const resumed = await send(t.url, '/v1/chat/stream', { method: 'POST', headers: resumeHeaders(t.token, newKey()), body: photoBody([image(notAnImage, 'image/webp')]) });
      expect(resumed.status).toBe(400);
      expect(lmstudio.requests.length).toBe(before);

      // A PNG sent as image/jpeg, a JPEG as image/webp: the provider is told what they are.
      expect((await stream(photoBody([text('two'), image(PNG, 'image/jpeg'), image(JPEG, 'image/webp')]))).status).toBe(200);
      expect(lmstudio.requests.at(-1)!.images).toEqual([
        { message: 0, mediaType: 'image/png', data: PNG },
        { message: 0, mediaType: 'image/jpeg', data: JPEG },
      ]);
    } finally {
      await lmstudio.close();
    }
  });

  it('at most 8 images per request: the 9th is 413', async () => {
    expect((await stream(photoBody(Array.from({ length: 8 }, () => image())))).status).toBe(200);
    const nine = await stream(JSON.stringify({ messages: [{ role: 'user', content: Array.from({ length: 5 }, () => image()) }, { role: 'assistant', content: 'ok' }, { role: 'user', content: Array.from({ length: 4 }, () => image()) }] }));
    expectError(nine, 413, 'request.body_too_large', /at most 8 images; messages\[2\]\.content\[3\] is one too many/);
  });

  it('each image at most 5 MiB decoded', async () => {
    expect((await stream(photoBody([image(base64Of(5 * MiB), 'image/jpeg')]))).status).toBe(200);
    expect(lastChat(ollama).images[0].data.length).toBe(base64Of(5 * MiB).length);
    const over = await stream(photoBody([image(base64Of(5 * MiB + 1), 'image/jpeg')]));
    expectError(over, 413, 'request.body_too_large', /^messages\[0\]\.content\[0\]\.data is 5\.0 MiB; an image may be at most 5 MiB/);
  });

  it('a request carrying images may be up to 10 MiB; past it 413 at once, without reading the rest', async () => {
    // Two photos of 3.5 MiB: about 9.3 MiB of JSON.
    const big = photoBody([text('two'), image(base64Of(3.5 * MiB), 'image/jpeg'), image(base64Of(3.5 * MiB), 'image/jpeg')]);
    expect(Buffer.byteLength(big)).toBeGreaterThan(9 * MiB);
    expect(Buffer.byteLength(big)).toBeLessThan(10 * MiB);
    const ok = await stream(big);
    expect(ok.status).toBe(200);
    expect(lastChat(ollama).images).toHaveLength(2);

    // Announced past 10 MiB: answered before a byte of the body is read.
    const answer = await rawRequest(`Content-Length: ${10 * MiB + 1}`, '{"messages":[{"role":"user","content":[');
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer).toContain('"code":"request.body_too_large"');
    expect(answer).toContain('larger than 10 MiB');
  });

  it('a request without images keeps 1 MiB: refused once its first MiB shows no content parts, the rest unread', async () => {
    // 2 MiB announced, 1 MiB + a little sent, then the client waits: the answer comes anyway.
    const head = `{"messages":[{"role":"user","content":"${'x'.repeat(MiB + 100)}`;
    const answer = await rawRequest(`Content-Length: ${2 * MiB}`, head);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer).toContain('larger than 1 MiB (only requests carrying images may be up to 10 MiB)');
  });

  it('content given as parts but without an image is read, then held to 1 MiB', async () => {
    const reply = await stream(photoBody([text('y'.repeat(MiB + 10))]));
    expectError(reply, 413, 'request.body_too_large', /larger than 1 MiB/);
    // Just under 1 MiB as parts is fine.
    expect((await stream(photoBody([text('y'.repeat(MiB - 200))]))).status).toBe(200);
  });

  it('the WebSocket holds the same limits', async () => {
    const nine = await socketChat(photoBody(Array.from({ length: 9 }, () => image())));
    expect(nine).toEqual([{ type: 'error', message: expect.stringMatching(/at most 8 images/) }]);
    const textOnly = await socketChat(JSON.stringify({ messages: [{ role: 'user', content: 'z'.repeat(MiB + 10) }] }));
    expect(textOnly).toEqual([{ type: 'error', message: expect.stringMatching(/larger than 1 MiB/) }]);
    const bad = await socketChat(photoBody([image('%%%%')]));
    expect(bad).toEqual([{ type: 'error', message: expect.stringMatching(/^messages\[0\]\.content\[0\]\.data is not valid base64/) }]);
  });

  it('the OpenAI door holds the same limits, in its own error shape', async () => {
    const reply = await completion(Array.from({ length: 9 }, () => ({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } })));
    expect(reply.status).toBe(413);
    expect(reply.json.error.code).toBe('request_too_large');
  });

  it('images are never logged', async () => {
    await stream(photoBody([text('hi'), image(JPEG, 'image/jpeg')]));
    await stream(photoBody([image('not base64!')]));
    expect(t.logLines.join('\n')).not.toContain(JPEG.slice(0, 16));
  });
});

function socketChat(first: string): Promise<any[]> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http:', 'ws:')}/v1/chat/ws`, [], { headers: bearer(t.token) });
    const events: any[] = [];
    ws.on('open', () => ws.send(first));
    ws.on('message', (data) => events.push(JSON.parse(String(data))));
    ws.on('close', () => resolve(events));
    ws.on('error', reject);
  });
}

/** A chat request written by hand: headers, then `body` and nothing more; resolves with all the server said before closing. */
async function rawRequest(lengthHeader: string, body: string): Promise<string> {
  const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  socket.on('error', () => undefined);
  socket.write(`POST /v1/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\n${lengthHeader}\r\n\r\n${body}`);
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (answer += d));
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return answer;
}
