/**
 * Tool calls through the OpenAI and Ollama doors (issue 22), driven by the real clients: the
 * `openai` SDK (streamed and whole tool calls, and `runTools` completing a multi-step loop with
 * two local functions against every provider kind) and ollama-js `chat({tools})`. The stand-ins
 * behind the relay check that the tools and history reach them in their own providers' forms.
 */
import { Ollama } from 'ollama';
import OpenAI, { APIError, BadRequestError } from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../../server/src/providers/types';
import { startAnthropicStandIn } from '../../fixtures/providers/anthropic';
import { startGeminiStandIn } from '../../fixtures/providers/gemini';
import { startOllamaStandIn } from '../../fixtures/providers/ollama';
import { startOpenAiStandIn } from '../../fixtures/providers/openai';
import type { StandIn, StandInCall } from '../../fixtures/providers/standin';
import { bearer, send } from '../../helpers/http';
import { startRelay, type TestRelay } from '../../helpers/relay';
import { FAKE_KEY } from '../../providers/helpers';

type AnyStandIn = StandIn & { set(o: Record<string, unknown>): void };

const KINDS = [
  { kind: 'ollama', start: () => startOllamaStandIn(), model: 'qwen3' },
  { kind: 'openai-compatible', start: () => startOpenAiStandIn(), model: 'gpt-test' },
  { kind: 'anthropic', start: () => startAnthropicStandIn(), model: 'claude-test' },
  { kind: 'gemini', start: () => startGeminiStandIn(), model: 'gemini-test' },
] as const;

let t: TestRelay;
const standIns: Record<string, AnyStandIn> = {};

beforeAll(async () => {
  t = await startRelay({ keepAliveMs: 100, providerIdleMs: 3_000, keys: { get: async () => FAKE_KEY, howToSet: () => 'set the key' } });
  for (const k of KINDS) standIns[k.kind] = (await k.start()) as unknown as AnyStandIn;
});
afterAll(async () => {
  await t.close();
  for (const s of Object.values(standIns)) await s.close();
});
afterEach(async () => {
  await expect.poll(() => t.relay.activeStreams).toBe(0);
});

function use(kind: (typeof KINDS)[number]['kind'], options: Record<string, unknown>): AnyStandIn {
  const k = KINDS.find((x) => x.kind === kind)!;
  const s = standIns[kind]!;
  s.set(options);
  const config: ProviderConfig = { id: 'p', kind, baseUrl: s.url, model: k.model };
  t.useProvider(config);
  return s;
}

const openai = () => new OpenAI({ baseURL: `${t.url}/v1`, apiKey: t.token, maxRetries: 0 });
const ollamaClient = () => new Ollama({ host: t.url, headers: { Authorization: `Bearer ${t.token}` } });

const weatherTool: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const paris: StandInCall = { name: 'get_weather', arguments: '{"city":"Paris"}' };
const ask = [{ role: 'user' as const, content: 'Weather in Paris?' }];

describe('OpenAI door', () => {
  it('non-streamed: message.tool_calls with the arguments as a JSON string, content null, finish_reason tool_calls', async () => {
    use('openai-compatible', { mode: 'tool-calls', calls: [paris] });
    const completion = await openai().chat.completions.create({ model: 'x', messages: ask, tools: [weatherTool], tool_choice: 'required' });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([{ id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
    expect(standIns['openai-compatible']!.requests.at(-1)!.body.tool_choice).toBe('required');
  });

  it('streamed: delta.tool_calls as OpenAI streams them, which the SDK assembles into the same call', async () => {
    use('anthropic', { mode: 'tool-calls', reply: ['Checking.'], calls: [paris, { name: 'get_weather', arguments: '{"city":"Oslo"}' }], fragmentSize: 4 });
    const stream = openai().chat.completions.stream({ model: 'x', messages: ask, tools: [weatherTool] });
    const done: string[] = [];
    stream.on('tool_calls.function.arguments.done', (e) => done.push(`${e.name} ${e.arguments}`));
    const final = await stream.finalChatCompletion();
    const message = final.choices[0]!.message;
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(message.content).toBe('Checking.');
    expect(message.tool_calls!.map((c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['get_weather', { city: 'Paris' }],
      ['get_weather', { city: 'Oslo' }],
    ]);
    expect(done).toEqual(['get_weather {"city":"Paris"}', 'get_weather {"city":"Oslo"}']);

    // On the wire: a call's first chunk carries index, id, type and name; the next its arguments.
    const raw = await send(t.url, '/v1/chat/completions', {
      method: 'POST',
      headers: { ...bearer(t.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: ask, tools: [weatherTool], stream: true }),
    });
    const deltas = raw.body
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)).choices[0]);
    const calls = deltas.filter((c) => c.delta.tool_calls).map((c) => c.delta.tool_calls[0]);
    expect(calls[0]).toEqual({ index: 0, id: expect.stringMatching(/^toolu_/), type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(calls[1]).toEqual({ index: 0, function: { arguments: '{"city":"Paris"}' } });
    expect(calls[2]).toMatchObject({ index: 1, type: 'function' });
    expect(deltas.at(-1).finish_reason).toBe('tool_calls');
    expect(raw.body.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it.each(KINDS.map((k) => k.kind))('runTools with two local functions completes a multi-step loop against %s', async (kind) => {
    const s = use(kind, {
      mode: 'tool-calls',
      script: [[paris], [{ name: 'get_time', arguments: '{"zone":"Europe/Paris"}' }]],
    });
    const before = s.requests.filter((r) => r.method === 'POST').length;
    const seen: string[] = [];
    const runner = openai().chat.completions.runTools({
      model: 'x',
      messages: ask,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'The weather in a city',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            parse: JSON.parse,
            function: (args: { city: string }) => {
              seen.push(`weather ${args.city}`);
              return `sunny in ${args.city}`;
            },
          },
        },
        {
          type: 'function',
          function: {
            name: 'get_time',
            description: 'The time in a zone',
            parameters: { type: 'object', properties: { zone: { type: 'string' } } },
            parse: JSON.parse,
            function: (args: { zone: string }) => {
              seen.push(`time ${args.zone}`);
              return '12:00';
            },
          },
        },
      ],
    });
    expect(await runner.finalContent()).toBe('Results: sunny in Paris | 12:00');
    expect(seen).toEqual(['weather Paris', 'time Europe/Paris']);
    // Three provider requests: two steps of calls and the answer, each with the whole history.
    expect(s.requests.filter((r) => r.method === 'POST').length - before).toBe(3);
  });

  it('runTools streaming against Gemini: the call ids made up for Gemini carry the loop', async () => {
    use('gemini', { mode: 'tool-calls', calls: [paris] });
    const runner = openai().chat.completions.runTools({
      model: 'x',
      stream: true,
      messages: ask,
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'w', parameters: { type: 'object', properties: {} }, parse: JSON.parse, function: () => 'rain' } }],
    });
    expect(await runner.finalContent()).toBe('Results: rain');
  });

  it('refuses bad tool requests with 400 and never calls the provider', async () => {
    const s = use('openai-compatible', { mode: 'tool-calls', calls: [paris] });
    const before = s.requests.length;
    const many = Array.from({ length: 129 }, (_, i) => ({ type: 'function' as const, function: { name: `t${i}`, parameters: { type: 'object' } } }));
    const big = { type: 'function' as const, function: { name: 'big', description: 'x'.repeat(64 * 1024), parameters: { type: 'object' } } };
    for (const [body, status, message] of [
      [{ messages: ask, tools: many }, 400, 'tools holds 129 tools; a request may offer at most 128.'],
      [{ messages: ask, tools: [big] }, 413, 'tools[0] is 65 KiB; a tool definition may be at most 64 KiB.'],
      [{ messages: ask, tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } } }, 400, 'tool_choice names the tool "nope", which is not among the tools offered.'],
      [{ messages: ask, tools: [weatherTool, weatherTool] }, 400, `tools[1].function.name "${weatherTool.function.name}" is offered twice; tool names must be unique.`],
      [{ messages: [...ask, { role: 'tool', content: 'x' }] }, 400, 'messages[1].tool_call_id must be the id of the tool call this result answers.'],
      [{ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{oops' } }] }] }, 400, 'messages[0].tool_calls[0].function.arguments must be a JSON object (as a string); it is not valid JSON.'],
    ] as const) {
      const reply = await send(t.url, '/v1/chat/completions', { method: 'POST', headers: { ...bearer(t.token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      expect(reply.status, message).toBe(status);
      expect(reply.json.error.message).toBe(message);
    }
    const err = (await openai()
      .chat.completions.create({ model: 'x', messages: ask, tools: many })
      .catch((e: unknown) => e)) as BadRequestError;
    expect(err).toBeInstanceOf(BadRequestError);
    expect(s.requests.length).toBe(before);
  });

  it('a model that cannot use tools: a 502 naming the model, and the stream ends with an error chunk', async () => {
    standIns.ollama!.set({ refuseTools: true });
    t.useProvider({ id: 'p', kind: 'ollama', baseUrl: standIns.ollama!.url, model: 'gemma:2b' });
    const err = (await openai()
      .chat.completions.create({ model: 'x', messages: ask, tools: [weatherTool] })
      .catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/model "gemma:2b" on Ollama at .* cannot use tools \(HTTP 400: registry\.ollama\.ai\/library\/gemma:2b does not support tools\)/);
  });
});

describe('Ollama door', () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'The weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];

  it('ollama-js chat({tools}) streamed: the call comes whole in message.tool_calls, done_reason stop', async () => {
    use('openai-compatible', { mode: 'tool-calls', reply: ['One moment.'], calls: [paris], fragmentSize: 2 });
    const parts = await ollamaClient().chat({ model: 'x', messages: ask, tools, stream: true });
    const calls: unknown[] = [];
    let content = '';
    let last: { done: boolean; done_reason: string } | undefined;
    for await (const part of parts) {
      content += part.message.content;
      calls.push(...(part.message.tool_calls ?? []));
      last = part;
    }
    expect(content).toBe('One moment.');
    expect(calls).toEqual([{ id: expect.stringMatching(/^call_/), function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }]);
    expect(last).toMatchObject({ done: true, done_reason: 'stop' });
  });

  it('ollama-js chat({tools}) whole, then the tool result with tool_name goes back and the model answers', async () => {
    const s = use('anthropic', { mode: 'tool-calls', calls: [paris] });
    const first = await ollamaClient().chat({ model: 'x', messages: ask, tools, stream: false });
    expect(first.done_reason).toBe('stop');
    expect(first.message.tool_calls).toEqual([{ id: expect.stringMatching(/^toolu_/), function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }]);
    // As ollama-js users write the loop: the assistant message as received, then a tool message naming the tool.
    const second = await ollamaClient().chat({
      model: 'x',
      messages: [...ask, first.message, { role: 'tool', content: 'sunny', tool_name: 'get_weather' }],
      tools,
      stream: false,
    });
    expect(second.message.content).toBe('Results: sunny');
    // Anthropic got the history in its own form: the result answers the tool_use id it made.
    const sent = s.requests.at(-1)!.body.messages;
    expect(sent.at(-1)).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: (first.message.tool_calls![0] as { id?: string }).id, content: 'sunny' }] });
  });

  it('a tool message without an id or name answers the call before it (older clients send neither)', async () => {
    const s = use('openai-compatible', { mode: 'tool-calls', calls: [paris] });
    const reply = await send(t.url, '/api/chat', {
      method: 'POST',
      headers: { ...bearer(t.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({
        stream: false,
        tools,
        messages: [...ask, { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] }, { role: 'tool', content: 'sunny' }],
      }),
    });
    expect(reply.status).toBe(200);
    expect(reply.json.message.content).toBe('Results: sunny');
    const sent = s.requests.at(-1)!.body.messages;
    expect(sent[1].tool_calls[0].id).toBe(sent[2].tool_call_id);
  });
});
