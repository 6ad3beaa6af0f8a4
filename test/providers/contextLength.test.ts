// The model's context length as providers say it (issue 40): Ollama's /api/show model_info
// "<arch>.context_length", an OpenAI-compatible /models entry's context_length (OpenRouter) or
// max_context_length (LM Studio); nothing said: undefined.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerContextLength } from '../../server/src/providers/contextLength';
import { startStandIn, type StandIn } from '../fixtures/providers/standin';

let server: StandIn;
beforeAll(async () => {
  server = await startStandIn(async (_req, res, recorded) => {
    res.setHeader('Content-Type', 'application/json');
    if (recorded.path === '/ollama/api/show' && recorded.body?.model === 'qwen3:8b') {
      return void res.end(JSON.stringify({ details: { family: 'qwen3' }, model_info: { 'general.architecture': 'qwen3', 'qwen3.context_length': 40960, 'qwen3.embedding_length': 4096 } }));
    }
    if (recorded.path === '/router/v1/models') {
      if (recorded.headers.authorization !== 'Bearer sk-or-test') return void res.writeHead(401).end('{}');
      return void res.end(JSON.stringify({ data: [{ id: 'other/model', context_length: 8192 }, { id: 'openai/gpt-4o', context_length: 128000, top_provider: { context_length: 128000 } }] }));
    }
    if (recorded.path === '/studio/v1/models') return void res.end(JSON.stringify({ object: 'list', data: [{ id: 'qwen2.5-7b-instruct', object: 'model', max_context_length: 32768 }] }));
    if (recorded.path === '/plain/v1/models') return void res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
    res.writeHead(404).end('{}');
  });
});
afterAll(() => server.close());

const signal = () => new AbortController().signal;

describe('providerContextLength', () => {
  it('reads what each provider says, and nothing when it says nothing', async () => {
    expect(await providerContextLength({ id: 'o', kind: 'ollama', baseUrl: `${server.url}/ollama`, model: 'qwen3:8b' }, undefined, signal())).toBe(40960);
    expect(await providerContextLength({ id: 'r', kind: 'openai-compatible', baseUrl: `${server.url}/router/v1`, model: 'openai/gpt-4o' }, 'sk-or-test', signal())).toBe(128000);
    expect(await providerContextLength({ id: 's', kind: 'openai-compatible', baseUrl: `${server.url}/studio/v1`, model: 'qwen2.5-7b-instruct' }, undefined, signal())).toBe(32768);
    expect(await providerContextLength({ id: 'p', kind: 'openai-compatible', baseUrl: `${server.url}/plain/v1`, model: 'm' }, undefined, signal())).toBeUndefined();
    expect(await providerContextLength({ id: 'x', kind: 'ollama', baseUrl: `${server.url}/ollama`, model: 'auto' }, undefined, signal())).toBeUndefined();
    expect(await providerContextLength({ id: 'y', kind: 'ollama', baseUrl: 'http://127.0.0.1:9', model: 'm' }, undefined, signal())).toBeUndefined();
  });
});
