import { describe, expect, it } from 'vitest';
import { createAdapter, isAbortError, ProviderError } from '../../server/src/providers';
import type { ProviderConfig } from '../../server/src/providers/types';
import { OPENAI_DEFAULT_REASONING, OPENAI_DEFAULT_REPLY, OPENAI_MID_STREAM_ERROR, startOpenAiStandIn, type OpenAiStandIn } from '../fixtures/providers/openai';
import { SPLIT_UTF8_REPLY } from '../fixtures/providers/standin';
import { deps, FAKE_KEY, HELLO, run, until, within, standInPerTest } from './helpers';

let oa: OpenAiStandIn;
let config: ProviderConfig;
standInPerTest(startOpenAiStandIn, (url) => ({ id: 'lmstudio', kind: 'openai-compatible', baseUrl: url, model: 'qwen2.5-7b-instruct', apiKeyEnv: 'TEST_OPENAI_KEY' }), (t) => ({ standIn: oa, config } = t));

describe('openai-compatible adapter', () => {
  it('streams content deltas and sends the messages unchanged', async () => {
    const adapter = createAdapter(config, deps());
    expect(adapter.label).toBe(`OpenAI-compatible server at ${oa.url}`);
    const messages = [
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'Hi' },
      { role: 'user' as const, content: 'there' },
    ];
    const out = await run(adapter, messages);
    expect(out.error).toBeUndefined();
    expect(out.pieces).toEqual(OPENAI_DEFAULT_REPLY.map((text) => ({ kind: 'text', text })));
    const req = oa.requests[0]!;
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.body).toEqual({ model: 'qwen2.5-7b-instruct', messages, stream: true });
  });

  it('sends no Authorization header without a key, and a Bearer one with a key', async () => {
    await run(createAdapter(config, deps()));
    expect(oa.requests[0]!.headers.authorization).toBeUndefined();
    await run(createAdapter(config, deps({ key: FAKE_KEY })));
    expect(oa.requests[1]!.headers.authorization).toBe(`Bearer ${FAKE_KEY}`);
  });

  it('passes maxTokens on as max_tokens', async () => {
    await run(createAdapter({ ...config, maxTokens: 321 }, deps()));
    expect(oa.requests[0]!.body.max_tokens).toBe(321);
  });

  it.each(['reasoning_content', 'reasoning'] as const)('yields %s deltas as reasoning before the answer', async (field) => {
    oa.set({ mode: 'thinking', reasoningField: field });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeUndefined();
    expect(out.pieces).toEqual([
      ...OPENAI_DEFAULT_REASONING.map((text) => ({ kind: 'reasoning', text })),
      ...OPENAI_DEFAULT_REPLY.map((text) => ({ kind: 'text', text })),
    ]);
  });

  it('accepts a finish_reason chunk as the end even without [DONE]', async () => {
    oa.set({ mode: 'finish-no-done' });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeUndefined();
    expect(out.text).toBe(OPENAI_DEFAULT_REPLY.join(''));
  });

  it('fails when the stream closes with neither finish_reason nor [DONE]', async () => {
    oa.set({ mode: 'no-end' });
    const out = await run(createAdapter(config, deps()));
    expect(out.text).toBe(OPENAI_DEFAULT_REPLY.join(''));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toMatch(new RegExp(`^OpenAI-compatible server at ${oa.url} ended the reply without finishing it`));
  });

  it.each(['openai', 'vllm', 'llamacpp'] as const)('reports a mid-stream error in %s form with its text', async (errorForm) => {
    oa.set({ mode: 'mid-stream-error', errorForm });
    const out = await run(createAdapter(config, deps()));
    expect(out.text).toBe(OPENAI_DEFAULT_REPLY[0]);
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`OpenAI-compatible server at ${oa.url} reported an error: ${OPENAI_MID_STREAM_ERROR}`);
  });

  it('fails on an event that is not JSON', async () => {
    oa.set({ mode: 'invalid-json' });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toMatch(/sent a reply that is not valid JSON/);
  });

  it('rejects a bad key without repeating it, and says how to set one', async () => {
    oa.set({ mode: 'http-error', status: 401 });
    const out = await run(createAdapter(config, deps({ key: FAKE_KEY })));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).not.toContain(FAKE_KEY);
    expect(out.error!.message).toContain('Incorrect API key provided: [redacted]');
    expect(out.error!.message).toMatch(
      new RegExp(`^OpenAI-compatible server at ${oa.url} rejected the API key \\(HTTP 401: .*\\); set the TEST_OPENAI_KEY environment variable$`),
    );
  });

  it('says a key is needed when the server wants one and none is set', async () => {
    oa.set({ mode: 'http-error', status: 401 });
    const out = await run(createAdapter(config, deps()));
    expect(out.error!.message).toMatch(/ needs an API key \(HTTP 401: .*\); set the TEST_OPENAI_KEY environment variable$/);
  });

  it('names the missing model on 404', async () => {
    oa.set({ mode: 'http-error', status: 404 });
    const out = await run(createAdapter({ ...config, model: 'gpt-9' }, deps()));
    expect(out.error!.message).toBe(
      `model "gpt-9" not found on OpenAI-compatible server at ${oa.url} (HTTP 404: The model \`gpt-9\` does not exist or you do not have access to it.); check the model name and the base URL`,
    );
  });

  it('includes the provider text on 429 and 5xx', async () => {
    oa.set({ mode: 'http-error', status: 429 });
    const limited = await run(createAdapter(config, deps()));
    expect(limited.error!.message).toBe(
      `OpenAI-compatible server at ${oa.url} is rate-limiting requests (HTTP 429: Rate limit reached for requests. Please try again in 20s.); try again later`,
    );
    oa.set({ mode: 'http-error', status: 500 });
    const failed = await run(createAdapter(config, deps()));
    expect(failed.error!.message).toBe(
      `OpenAI-compatible server at ${oa.url} failed with a server error (HTTP 500: ${OPENAI_MID_STREAM_ERROR})`,
    );
  });

  it('keeps multi-byte characters whole across chunks', async () => {
    oa.set({ mode: 'split-utf8' });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeUndefined();
    expect(out.text).toBe(SPLIT_UTF8_REPLY.join(''));
  });

  it('counts OpenRouter processing comments as signs of life', async () => {
    oa.set({ processingComments: 5, chunkDelayMs: 120 });
    const out = await run(createAdapter(config, deps({ idleTimeoutMs: 400 })));
    expect(out.error).toBeUndefined();
    expect(out.text).toBe(OPENAI_DEFAULT_REPLY.join(''));
  });

  it('gives up on a server that sends headers and then nothing', async () => {
    oa.set({ mode: 'hang-after-headers' });
    const out = await run(createAdapter(config, deps({ idleTimeoutMs: 250 })));
    expect(out.error!.message).toBe(`OpenAI-compatible server at ${oa.url} sent nothing for 0.25 s`);
  });

  it('uses the first listed model for "auto", with the key on the listing too', async () => {
    oa.set({ models: ['first-model', 'second-model'] });
    const out = await run(createAdapter({ ...config, model: 'auto' }, deps({ key: FAKE_KEY })));
    expect(out.error).toBeUndefined();
    expect(oa.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models', 'POST /v1/chat/completions']);
    expect(oa.requests[0]!.headers.authorization).toBe(`Bearer ${FAKE_KEY}`);
    expect(oa.requests[1]!.body.model).toBe('first-model');
  });

  it('says so when the server lists no models', async () => {
    oa.set({ mode: 'empty-models' });
    const out = await run(createAdapter({ ...config, model: 'auto' }, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`no models are loaded on OpenAI-compatible server at ${oa.url}; load or download one in the server first`);
  });

  it('closes the connection at once when the caller aborts', async () => {
    oa.set({ chunkDelayMs: 300, reply: ['a', 'b', 'c', 'd', 'e'] });
    const ctl = new AbortController();
    const pending = run(createAdapter(config, deps({ idleTimeoutMs: 10_000 })), HELLO, ctl.signal);
    await until(() => oa.requests.length === 1);
    await new Promise((r) => setTimeout(r, 100));
    ctl.abort();
    await within(oa.lastRequestClosed, 1_000, 'closing the provider connection');
    expect(oa.lastRequestAborted).toBe(true);
    const out = await within(pending, 1_000, 'ending the stream');
    expect(isAbortError(out.error)).toBe(true);
  });
});
