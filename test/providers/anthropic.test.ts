import { describe, expect, it } from 'vitest';
import { createAdapter, isAbortError, ProviderError } from '../../server/src/providers';
import { ANTHROPIC_DEFAULT_MAX_TOKENS } from '../../server/src/providers/anthropic';
import type { ProviderConfig } from '../../server/src/providers/types';
import { ANTHROPIC_DEFAULT_REPLY, ANTHROPIC_DEFAULT_THINKING, startAnthropicStandIn, type AnthropicStandIn } from '../fixtures/providers/anthropic';
import { SPLIT_UTF8_REPLY } from '../fixtures/providers/standin';
import { deps, FAKE_KEY, HELLO, run, until, within, standInPerTest } from './helpers';

let a: AnthropicStandIn;
let config: ProviderConfig;
let label: string;
standInPerTest(startAnthropicStandIn, (url) => ({ id: 'claude', kind: 'anthropic', baseUrl: url, model: 'claude-sonnet-4-5', apiKeyEnv: 'ANTHROPIC_API_KEY' }), (t) => ({ standIn: a, config, label } = t), 'Anthropic');

const keyed = (o: { idleTimeoutMs?: number } = {}) => deps({ key: FAKE_KEY, ...o });

describe('anthropic adapter', () => {
  it('streams text deltas with the key and version headers', async () => {
    const adapter = createAdapter(config, keyed());
    expect(adapter.label).toBe(label);
    const out = await run(adapter);
    expect(out.error).toBeUndefined();
    expect(out.pieces).toEqual(ANTHROPIC_DEFAULT_REPLY.map((text) => ({ kind: 'text', text })));
    const req = a.requests[0]!;
    expect(req.path).toBe('/v1/messages');
    expect(req.headers['x-api-key']).toBe(FAKE_KEY);
    expect(req.headers['anthropic-version']).toBe('2023-06-01');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers.authorization).toBeUndefined();
  });

  it('moves system messages to `system`, merges same-role turns and starts with the user', async () => {
    await run(createAdapter(config, keyed()), [
      { role: 'system', content: 'Be brief.' },
      { role: 'assistant', content: 'Hello, I am Claude.' },
      { role: 'user', content: 'Hi' },
      { role: 'user', content: 'there' },
      { role: 'system', content: 'Answer in English.' },
      { role: 'assistant', content: '' },
      { role: 'assistant', content: 'Yes?' },
      { role: 'user', content: 'Tell me a joke' },
    ]);
    expect(a.requests[0]!.body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
      system: 'Be brief.\n\nAnswer in English.',
      messages: [
        { role: 'user', content: 'Continue.' },
        { role: 'assistant', content: 'Hello, I am Claude.' },
        { role: 'user', content: 'Hi\n\nthere' },
        { role: 'assistant', content: 'Yes?' },
        { role: 'user', content: 'Tell me a joke' },
      ],
      stream: true,
    });
  });

  it('omits `system` when there is none and honours maxTokens', async () => {
    await run(createAdapter({ ...config, maxTokens: 1024 }, keyed()));
    expect(a.requests[0]!.body).not.toHaveProperty('system');
    expect(a.requests[0]!.body.max_tokens).toBe(1024);
  });

  it('yields thinking deltas as reasoning, before the text', async () => {
    a.set({ mode: 'thinking' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error).toBeUndefined();
    expect(out.pieces).toEqual([
      ...ANTHROPIC_DEFAULT_THINKING.map((text) => ({ kind: 'reasoning', text })),
      ...ANTHROPIC_DEFAULT_REPLY.map((text) => ({ kind: 'text', text })),
    ]);
  });

  it('needs a key: without one it fails before any request, saying how to set it', async () => {
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`${label} needs an API key and none is set; set the ANTHROPIC_API_KEY environment variable`);
    expect(a.requests).toHaveLength(0);
  });

  it('reports a rejected key without echoing it', async () => {
    a.set({ mode: 'http-error', status: 401 });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error!.message).not.toContain(FAKE_KEY);
    expect(out.error!.message).toBe(
      `${label} rejected the API key (HTTP 401: invalid x-api-key [redacted]); set the ANTHROPIC_API_KEY environment variable`,
    );
  });

  it.each([
    [404, (l: string) => `model "claude-sonnet-4-5" not found on ${l} (HTTP 404: model: claude-sonnet-4-5); check the model name and the base URL`],
    [429, (l: string) => `${l} is rate-limiting requests (HTTP 429: Number of request tokens has exceeded your per-minute rate limit); try again later`],
    [500, (l: string) => `${l} failed with a server error (HTTP 500: Internal server error)`],
    [529, (l: string) => `${l} is overloaded (HTTP 529: Overloaded); try again shortly`],
  ])('words HTTP %i with the provider text', async (status, expected) => {
    a.set({ mode: 'http-error', status });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(expected(label));
  });

  it('turns an overloaded error event mid-stream into a failure', async () => {
    a.set({ mode: 'mid-stream-error' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.text).toBe(ANTHROPIC_DEFAULT_REPLY[0]);
    expect(out.error!.message).toBe(`${label} is overloaded: Overloaded; try again shortly`);
  });

  it('includes the text of other error events', async () => {
    a.set({ mode: 'mid-stream-error', errorType: 'api_error', errorMessage: 'Internal server error' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error!.message).toBe(`${label} reported an error: Internal server error (api_error)`);
  });

  it('fails when message_stop never comes', async () => {
    a.set({ mode: 'no-end' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.text).toBe(ANTHROPIC_DEFAULT_REPLY.join(''));
    expect(out.error!.message).toMatch(/ended the reply without finishing it/);
  });

  it('fails on invalid JSON', async () => {
    a.set({ mode: 'invalid-json' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error!.message).toMatch(/^Anthropic at .* sent a reply that is not valid JSON/);
  });

  it('keeps multi-byte characters whole', async () => {
    a.set({ mode: 'split-utf8' });
    const out = await run(createAdapter(config, keyed()));
    expect(out.error).toBeUndefined();
    expect(out.text).toBe(SPLIT_UTF8_REPLY.join(''));
  });

  it('gives up when nothing comes', async () => {
    a.set({ mode: 'hang' });
    const out = await run(createAdapter(config, keyed({ idleTimeoutMs: 300 })));
    expect(out.error!.message).toBe(`${label} sent nothing for 0.3 s`);
  });

  it('closes the connection at once when the caller aborts', async () => {
    a.set({ mode: 'hang-after-headers' });
    const ctl = new AbortController();
    const pending = run(createAdapter(config, keyed({ idleTimeoutMs: 10_000 })), HELLO, ctl.signal);
    await until(() => a.requests.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    ctl.abort();
    await within(a.lastRequestClosed, 1_000, 'closing the provider connection');
    expect(isAbortError((await within(pending, 1_000, 'ending the stream')).error)).toBe(true);
  });
});
