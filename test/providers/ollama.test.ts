import { describe, expect, it } from 'vitest';
import { createAdapter, isAbortError, ProviderError } from '../../server/src/providers';
import type { ProviderConfig } from '../../server/src/providers/types';
import { OLLAMA_DEFAULT_REPLY, OLLAMA_DEFAULT_THINKING, OLLAMA_MID_STREAM_ERROR, startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { SPLIT_UTF8_REPLY } from '../fixtures/providers/standin';
import { closedPort, deps, HELLO, run, until, within, standInPerTest } from './helpers';

let ollama: OllamaStandIn;
let config: ProviderConfig;
standInPerTest(startOllamaStandIn, (url) => ({ id: 'local', kind: 'ollama', baseUrl: url, model: 'qwen3' }), (t) => ({ standIn: ollama, config } = t));

describe('ollama adapter', () => {
  it('streams the reply piece by piece and sends the chat as Ollama expects it', async () => {
    const adapter = createAdapter(config, deps());
    expect(adapter.label).toBe(`Ollama at ${ollama.url}`);
    const messages = [
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'Hi there' },
    ];
    const out = await run(adapter, messages);
    expect(out.error).toBeUndefined();
    expect(out.pieces).toEqual(OLLAMA_DEFAULT_REPLY.map((text) => ({ kind: 'text', text })));
    expect(ollama.requests).toHaveLength(1);
    const req = ollama.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/api/chat');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body).toEqual({ model: 'qwen3', messages, stream: true });
    expect(req.body).not.toHaveProperty('think');
  });

  it('yields reasoning before the text that shares its line', async () => {
    ollama.set({ mode: 'thinking' });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeUndefined();
    const [t1, t2, t3] = OLLAMA_DEFAULT_THINKING;
    const [r1, ...rest] = OLLAMA_DEFAULT_REPLY;
    expect(out.pieces).toEqual([
      { kind: 'reasoning', text: t1 },
      { kind: 'reasoning', text: t2 },
      { kind: 'reasoning', text: t3 },
      { kind: 'text', text: r1 },
      ...rest.map((text) => ({ kind: 'text', text })),
    ]);
  });

  it('passes inline <think> text through untouched', async () => {
    ollama.set({ reply: ['<think>hm</think>', 'Answer & more'] });
    const out = await run(createAdapter(config, deps()));
    expect(out.text).toBe('<think>hm</think>Answer & more');
  });

  it('names the model and how to get it when Ollama answers 404', async () => {
    ollama.set({ mode: 'http-error', status: 404 });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`model "qwen3" not found on Ollama at ${ollama.url}; run "ollama pull qwen3"`);
  });

  it('includes Ollama\'s own text for other HTTP errors', async () => {
    ollama.set({ mode: 'http-error', status: 500, errorMessage: 'llama runner process has terminated: exit status 2' });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(
      `Ollama at ${ollama.url} failed with a server error (HTTP 500: llama runner process has terminated: exit status 2)`,
    );
  });

  it('reports 400 with the provider text', async () => {
    ollama.set({ mode: 'http-error', status: 400, errorMessage: '"qwen3" does not support thinking' });
    const out = await run(createAdapter(config, deps()));
    expect(out.error!.message).toBe(`Ollama at ${ollama.url} refused the request (HTTP 400: "qwen3" does not support thinking)`);
  });

  it('turns an error line mid-stream into a failure after the text before it', async () => {
    ollama.set({ mode: 'mid-stream-error' });
    const out = await run(createAdapter(config, deps()));
    expect(out.text).toBe(OLLAMA_DEFAULT_REPLY[0]);
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`Ollama at ${ollama.url} reported an error: ${OLLAMA_MID_STREAM_ERROR}`);
  });

  it('fails when the stream ends without "done":true', async () => {
    ollama.set({ mode: 'no-end' });
    const out = await run(createAdapter(config, deps()));
    expect(out.text).toBe(OLLAMA_DEFAULT_REPLY.join(''));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toMatch(new RegExp(`^Ollama at ${ollama.url} ended the reply without finishing it`));
  });

  it('fails on a line that is not JSON', async () => {
    ollama.set({ mode: 'invalid-json' });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toMatch(/^Ollama at .* sent a reply that is not valid JSON/);
  });

  it('keeps multi-byte characters whole when a chunk splits them', async () => {
    ollama.set({ mode: 'split-utf8' });
    const out = await run(createAdapter(config, deps()));
    expect(out.error).toBeUndefined();
    expect(out.text).toBe(SPLIT_UTF8_REPLY.join(''));
    expect(out.text).not.toContain('\uFFFD');
  });

  it('gives up when Ollama sends headers and then nothing', async () => {
    ollama.set({ mode: 'hang-after-headers' });
    const out = await run(createAdapter(config, deps({ idleTimeoutMs: 300 })));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`Ollama at ${ollama.url} sent nothing for 0.3 s`);
  });

  it('gives up when Ollama sends nothing at all', async () => {
    ollama.set({ mode: 'hang' });
    const out = await run(createAdapter(config, deps({ idleTimeoutMs: 300 })));
    expect(out.error!.message).toBe(`Ollama at ${ollama.url} sent nothing for 0.3 s`);
  });

  it('measures idleness between chunks, not the whole reply', async () => {
    ollama.set({ chunkDelayMs: 150 });
    const out = await run(createAdapter(config, deps({ idleTimeoutMs: 400 })));
    expect(out.error).toBeUndefined();
    expect(out.text).toBe(OLLAMA_DEFAULT_REPLY.join(''));
  });

  it('waits out a cold start shorter than the idle limit', async () => {
    ollama.set({ headersDelayMs: 300 });
    const out = await run(createAdapter(config, deps({ idleTimeoutMs: 1_000 })));
    expect(out.error).toBeUndefined();
  });

  it('says Ollama is not reachable when nothing listens', async () => {
    const port = await closedPort();
    const out = await run(createAdapter({ id: 'x', kind: 'ollama', baseUrl: `http://127.0.0.1:${port}`, model: 'qwen3' }, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`Ollama at http://127.0.0.1:${port} is not reachable (ECONNREFUSED)`);
  });

  it('picks the first listed model for "auto" and caches the choice', async () => {
    ollama.set({ models: ['llama3.2:latest', 'qwen3:latest'] });
    const adapter = createAdapter({ ...config, model: 'auto' }, deps());
    expect((await run(adapter)).error).toBeUndefined();
    expect((await run(adapter)).error).toBeUndefined();
    expect(ollama.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /api/tags', 'POST /api/chat', 'POST /api/chat']);
    expect(ollama.requests[1]!.body.model).toBe('llama3.2:latest');
    expect(ollama.requests[2]!.body.model).toBe('llama3.2:latest');
  });

  it('treats a missing model as "auto"', async () => {
    const out = await run(createAdapter({ id: 'local', kind: 'ollama', baseUrl: ollama.url }, deps()));
    expect(out.error).toBeUndefined();
    expect(ollama.requests[1]!.body.model).toBe('qwen3:latest');
  });

  it('says so when no models are installed', async () => {
    ollama.set({ mode: 'empty-models' });
    const out = await run(createAdapter({ ...config, model: 'auto' }, deps()));
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`no models are installed on Ollama at ${ollama.url}; run "ollama pull <model>"`);
  });

  it('closes the connection at once when the caller aborts, without a provider error', async () => {
    ollama.set({ mode: 'hang-after-headers' });
    const ctl = new AbortController();
    const pending = run(createAdapter(config, deps({ idleTimeoutMs: 10_000 })), HELLO, ctl.signal);
    await until(() => ollama.requests.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    ctl.abort();
    await within(ollama.lastRequestClosed, 1_000, 'closing the provider connection');
    const out = await within(pending, 1_000, 'ending the stream');
    expect(out.error).toBeDefined();
    expect(isAbortError(out.error)).toBe(true);
    expect(out.error).not.toBeInstanceOf(ProviderError);
  });

  it('closes the connection when the consumer stops taking pieces mid-reply, passing its error on unchanged', async () => {
    ollama.set({ chunkDelayMs: 200, reply: ['a', 'b', 'c', 'd', 'e', 'f'] });
    const stop = new Error('the consumer stops here');
    const texts: string[] = [];
    const ended = createAdapter(config, deps()).run(HELLO, new AbortController().signal, {
      piece: (_kind, text) => {
        texts.push(text);
        if (text === 'b') throw stop;
      },
      flush: () => undefined,
    });
    await expect(within(ended, 1_000, 'ending the reply')).rejects.toBe(stop);
    expect(texts).toEqual(['a', 'b']);
    await within(ollama.lastRequestClosed, 1_000, 'closing the provider connection');
    expect(ollama.lastRequestAborted).toBe(true);
  });
});
