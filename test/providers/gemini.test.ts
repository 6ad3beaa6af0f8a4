import { describe, expect, it } from 'vitest';
import { createAdapter, isAbortError, ProviderError } from '../../server/src/providers';
import type { ProviderConfig } from '../../server/src/providers/types';
import { GEMINI_DEFAULT_REPLY, GEMINI_DEFAULT_THINKING, GEMINI_MID_STREAM_ERROR, startGeminiStandIn, type GeminiStandIn } from '../fixtures/providers/gemini';
import { SPLIT_UTF8_REPLY } from '../fixtures/providers/standin';
import { deps, FAKE_KEY, HELLO, run, until, within, standInPerTest } from './helpers';

let g: GeminiStandIn;
let config: ProviderConfig;
let label: string;
standInPerTest(startGeminiStandIn, (url) => ({ id: 'gemini', kind: 'gemini', baseUrl: url, model: 'gemini-2.5-flash', apiKeyEnv: 'GEMINI_API_KEY' }), (t) => ({ standIn: g, config, label } = t), 'Gemini');

const keyed = (o: { idleTimeoutMs?: number } = {}) => deps({ key: FAKE_KEY, ...o });

describe('gemini adapter', () => {
  it('streams text parts to the streamGenerateContent SSE endpoint with x-goog-api-key', async () => {
    const adapter = createAdapter(config, keyed());
    expect(adapter.label).toBe(label);
    const out = await run(adapter);
    expect(out.error).toBeUndefined();
    expect(out.pieces).toEqual(GEMINI_DEFAULT_REPLY.map((text) => ({ kind: 'text', text })));
    const req = g.requests[0]!;
    expect(req.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(req.headers['x-goog-api-key']).toBe(FAKE_KEY);
    expect(req.path).not.toContain(FAKE_KEY);
    expect(req.headers.authorization).toBeUndefined();
  });

  it('sends user/model contents and the system prompt as systemInstruction', async () => {
    await run(createAdapter({ ...config, maxTokens: 500 }, keyed()), [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'assistant', content: 'Anything else?' },
      { role: 'user', content: 'A joke' },
    ]);
    expect(g.requests[0]!.body).toEqual({
      contents: [
        { role: 'user', parts: [{ text: 'Hi' }] },
        { role: 'model', parts: [{ text: 'Hello!\n\nAnything else?' }] },
        { role: 'user', parts: [{ text: 'A joke' }] },
      ],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { maxOutputTokens: 500 },
    });
  });

  it('omits systemInstruction when there is no system message', async () => {
    await run(createAdapter(config, keyed()));
    expect(g.requests[0]!.body).toEqual({ contents: [{ role: 'user', parts: [{ text: HELLO[0]!.content }] }] });
  });

  it('yields thought parts as reasoning', async () => {
    g.set({ mode: 'thinking' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error).toBeUndefined();
    expect(out.pieces).toEqual([
      ...GEMINI_DEFAULT_THINKING.map((text) => ({ kind: 'reasoning', text })),
      ...GEMINI_DEFAULT_REPLY.map((text) => ({ kind: 'text', text })),
    ]);
  });

  it('needs a key', async () => {
    const out = await run(createAdapter(config, deps()));
    expect(out.error!.message).toBe(`${label} needs an API key and none is set; set the GEMINI_API_KEY environment variable`);
    expect(g.requests).toHaveLength(0);
  });

  it('treats 400 API_KEY_INVALID as a rejected key, without echoing the key', async () => {
    g.set({ mode: 'http-error', status: 400 });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).not.toContain(FAKE_KEY);
    expect(out.error!.message).toBe(
      `${label} rejected the API key (HTTP 400: API key not valid. Please pass a valid API key. ([redacted])); set the GEMINI_API_KEY environment variable`,
    );
  });

  it('redacts the key from a 403 too', async () => {
    g.set({ mode: 'http-error', status: 403 });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error!.message).not.toContain(FAKE_KEY);
    expect(out.error!.message).toMatch(/rejected the API key \(HTTP 403: .*\[redacted\]\)/);
  });

  it.each([
    [404, (l: string) => `model "gemini-2.5-flash" not found on ${l} (HTTP 404: models/gemini-2.5-flash is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.); check the model name and the base URL`],
    [429, (l: string) => `${l} is rate-limiting requests (HTTP 429: You exceeded your current quota, please check your plan and billing details.); try again later`],
    [503, (l: string) => `${l} is unavailable (HTTP 503: The model is overloaded. Please try again later.); try again shortly`],
  ])('words HTTP %i with the provider text', async (status, expected) => {
    g.set({ mode: 'http-error', status });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error!.message).toBe(expected(label));
  });

  it('reports an error chunk mid-stream', async () => {
    g.set({ mode: 'mid-stream-error' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.text).toBe(GEMINI_DEFAULT_REPLY[0]);
    expect(out.error!.message).toBe(`${label} reported an error: ${GEMINI_MID_STREAM_ERROR}`);
  });

  it('fails when no candidate carries a finishReason', async () => {
    g.set({ mode: 'no-end' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.text).toBe(GEMINI_DEFAULT_REPLY.join(''));
    expect(out.error!.message).toMatch(/ended the reply without finishing it/);
  });

  it('fails when Gemini stops the reply for safety', async () => {
    g.set({ mode: 'safety' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error!.message).toBe(`${label} stopped the reply early (finishReason SAFETY)`);
  });

  it('fails on invalid JSON', async () => {
    g.set({ mode: 'invalid-json' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error!.message).toMatch(/^Gemini at .* sent a reply that is not valid JSON/);
  });

  it('keeps multi-byte characters whole', async () => {
    g.set({ mode: 'split-utf8' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error).toBeUndefined();
    expect(out.text).toBe(SPLIT_UTF8_REPLY.join(''));
  });

  it('gives up on headers followed by silence', async () => {
    g.set({ mode: 'hang-after-headers' });
    const out = await run(createAdapter(config, keyed({ idleTimeoutMs: 300 })));
    expect(out.error!.message).toBe(`${label} sent nothing for 0.3 s`);
  });

  it('closes the connection at once when the caller aborts', async () => {
    g.set({ mode: 'hang' });
    const ctl = new AbortController();
    const pending = run(createAdapter(config, keyed({ idleTimeoutMs: 10_000 })), HELLO, ctl.signal);
    await until(() => g.requests.length === 1);
    ctl.abort();
    await within(g.lastRequestClosed, 1_000, 'closing the provider connection');
    expect(isAbortError((await within(pending, 1_000, 'ending the stream')).error)).toBe(true);
  });
});
