/**
 * Adapters a host contributes (the extension's `vscode-lm`) and the runner probe: createAdapter
 * asks the host first; without a host adapter `vscode-lm` ends the stream with one error event
 * saying it needs VS Code; detectRunners finds stand-in runners on loopback ports.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter, validateProviderConfig } from '../../server/src/providers';
import { detectRunners, runnersToProbe, LOCAL_RUNNERS } from '../../server/src/providers/detect';
import type { AdapterFactories } from '../../server/src/providers/types';
import { startOllamaStandIn, type OllamaStandIn } from '../fixtures/providers/ollama';
import { startOpenAiStandIn, type OpenAiStandIn } from '../fixtures/providers/openai';
import { chatBody, chatHeaders, closedPort, parseEvents, send } from '../helpers/http';
import { startRelay } from '../helpers/relay';
import { deps, run } from './helpers';

describe('host adapters', () => {
  const vscodeLm = { id: 'copilot', kind: 'vscode-lm', model: 'copilot/gpt-4o' } as const;

  it('validates vscode-lm records (no baseUrl) and names them without a URL', () => {
    expect(validateProviderConfig({ id: 'v', kind: 'vscode-lm', model: 'copilot' }, 'p')).toEqual({ id: 'v', kind: 'vscode-lm', model: 'copilot' });
    expect(() => validateProviderConfig({ id: 'v', kind: 'vscode-lm', baseUrl: 'http://x' }, 'p')).toThrow(/baseUrl has no meaning/);
    expect(createAdapter(vscodeLm, deps()).label).toBe("VS Code's language models");
  });

  it('createAdapter uses the host adapter for its kind', async () => {
    const hosted: AdapterFactories = {
      'vscode-lm': (config) => ({
        label: 'host',
        async run(_messages, _signal, sink) {
          sink.model?.(config.model!);
          sink.piece('text', 'from the host');
          await sink.flush();
          return 'stop';
        },
      }),
    };
    const out = await run(createAdapter(vscodeLm, deps(), hosted));
    expect(out.text).toBe('from the host');
    expect(out.finish).toBe('stop');
  });

  it('without a host adapter (deskrelay serve) vscode-lm fails with a message saying it needs VS Code', async () => {
    const out = await run(createAdapter(vscodeLm, deps()));
    expect(out.error?.name).toBe('ProviderError');
    expect(out.error?.message).toMatch(/Provider "copilot" is VS Code's language models, which only the DeskRelay extension in VS Code can use; deskrelay serve cannot/);
  });

  it('through the relay: the host adapter streams, and without one the stream is one error event', async () => {
    const hosted: AdapterFactories = {
      'vscode-lm': () => ({
        label: 'host',
        async run(_m, _s, sink) {
          sink.piece('text', 'Hi ');
          sink.piece('text', 'phone');
          await sink.flush();
          return 'stop';
        },
      }),
    };
    const withHost = await startRelay({ adapters: hosted });
    const without = await startRelay();
    try {
      for (const r of [withHost, without]) r.useProvider(vscodeLm);
      const a = parseEvents((await send(withHost.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(withHost.token), body: chatBody() })).body);
      expect(a.at(-1)).toMatchObject({ type: 'done', content: 'Hi phone' });
      const b = parseEvents((await send(without.url, '/v1/chat/stream', { method: 'POST', headers: chatHeaders(without.token), body: chatBody() })).body);
      expect(b).toHaveLength(1);
      expect(b[0]).toMatchObject({ type: 'error' });
      expect(b[0].message).toMatch(/only the DeskRelay extension in VS Code can use/);
    } finally {
      await withHost.close();
      await without.close();
    }
  });
});

describe('detectRunners', () => {
  let ollama: OllamaStandIn;
  let openai: OpenAiStandIn;
  beforeAll(async () => {
    ollama = await startOllamaStandIn();
    openai = await startOpenAiStandIn();
  });
  afterAll(async () => {
    await ollama.close();
    await openai.close();
  });
  const portOf = (url: string) => new URL(url).port;

  it('probes the default ports, or exactly those DESKRELAY_RUNNER_PORTS names', () => {
    expect(runnersToProbe({}).map((r) => [r.title, r.port])).toEqual([
      ['Ollama', 11434],
      ['LM Studio', 1234],
      ['llama.cpp server', 8080],
      ['Jan', 1337],
      ['vLLM', 8000],
    ]);
    expect(runnersToProbe({ DESKRELAY_RUNNER_PORTS: 'jan=4000, ollama=4001' }).map((r) => [r.name, r.port])).toEqual([
      ['jan', 4000],
      ['ollama', 4001],
    ]);
    expect(runnersToProbe({ DESKRELAY_RUNNER_PORTS: '' })).toEqual([]);
    expect(() => runnersToProbe({ DESKRELAY_RUNNER_PORTS: 'example.com=80' })).toThrow(/is not <runner>=<port>/);
  });

  it('finds the runners that answer, in preference order, with their models', async () => {
    const closed = await closedPort();
    const env = { DESKRELAY_RUNNER_PORTS: `vllm=${portOf(openai.url)},ollama=${portOf(ollama.url)},jan=${closed}` };
    const found = await detectRunners({ env });
    expect(found.map((f) => f.runner.name)).toEqual(['vllm', 'ollama']);
    expect(found[1]!.config).toEqual({ id: 'local', kind: 'ollama', baseUrl: `http://127.0.0.1:${portOf(ollama.url)}`, model: 'auto' });
    expect(found[1]!.models).toEqual(['qwen3:latest', 'llama3.2:latest']);
    expect(found[0]!.config.baseUrl).toBe(`http://127.0.0.1:${portOf(openai.url)}/v1`);
    expect(found[0]!.models).toContain('qwen2.5-7b-instruct');
    expect(LOCAL_RUNNERS).toHaveLength(5);
  });

  it('an Ollama probe at an OpenAI-compatible server is not a match', async () => {
    const found = await detectRunners({ env: { DESKRELAY_RUNNER_PORTS: `ollama=${portOf(openai.url)}` } });
    expect(found).toEqual([]);
  });
});
