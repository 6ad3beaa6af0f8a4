/**
 * Tool calls through every provider adapter (issue 22), through the chat service as a door uses
 * it: each stand-in checks that it received the tools and the tool history in its own wire form
 * (and refuses anything else as its provider would), streams calls in its own form, and the
 * relay hands over each call whole, once, in order with the text, ending with `tool_calls`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ChatService, type Ending } from '../../server/src/chat/service';
import { clearModelCache } from '../../server/src/providers';
import type { ChatMessage, PieceKind, ProviderConfig, ToolCall, ToolOptions } from '../../server/src/providers/types';
import { startAnthropicStandIn } from '../fixtures/providers/anthropic';
import { startGeminiStandIn } from '../fixtures/providers/gemini';
import { startOllamaStandIn } from '../fixtures/providers/ollama';
import { startOpenAiStandIn } from '../fixtures/providers/openai';
import type { StandIn, StandInCall } from '../fixtures/providers/standin';
import { FAKE_KEY } from './helpers';

type AnyStandIn = StandIn & { set(o: Record<string, unknown>): void };

interface Kind {
  kind: 'ollama' | 'openai-compatible' | 'anthropic' | 'gemini';
  start(): Promise<AnyStandIn>;
  config(url: string): ProviderConfig;
}

const kinds: Kind[] = [
  { kind: 'ollama', start: () => startOllamaStandIn() as never, config: (url) => ({ id: 'p', kind: 'ollama', baseUrl: url, model: 'qwen3' }) },
  { kind: 'openai-compatible', start: () => startOpenAiStandIn() as never, config: (url) => ({ id: 'p', kind: 'openai-compatible', baseUrl: url, model: 'gpt-test' }) },
  { kind: 'anthropic', start: () => startAnthropicStandIn() as never, config: (url) => ({ id: 'p', kind: 'anthropic', baseUrl: url, model: 'claude-test' }) },
  { kind: 'gemini', start: () => startGeminiStandIn() as never, config: (url) => ({ id: 'p', kind: 'gemini', baseUrl: url, model: 'gemini-test' }) },
];

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
};
const TIME = { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: {} } };
const TOOLS: ToolOptions = { tools: [WEATHER, TIME] };

/** Everything the door sees, in order: text pieces and calls as one list. */
interface Seen {
  order: ({ text: string } | { call: ToolCall })[];
  calls: ToolCall[];
  text: string;
  ending: Ending;
}

async function chatWith(provider: ProviderConfig, messages: ChatMessage[], options?: ToolOptions): Promise<Seen> {
  const service = new ChatService({
    providers: { active: () => ({ ok: true, config: provider }) },
    keys: { get: async () => FAKE_KEY, howToSet: () => 'set it' },
    providerIdleMs: 3_000,
    maxConcurrentStreams: () => 8,
    logger: { info() {}, warn() {}, error() {} },
  });
  const order: Seen['order'] = [];
  const handle = service.start(
    provider,
    messages,
    {
      piece: (kind: PieceKind, text: string) => {
        if (kind !== 'text') return;
        const last = order.at(-1);
        if (last && 'text' in last) last.text += text;
        else order.push({ text });
      },
      toolCall: (call) => order.push({ call }),
      flush: () => undefined,
      end: () => undefined,
    },
    options,
  );
  const ending = await handle.done;
  const calls = order.flatMap((o) => ('call' in o ? [o.call] : []));
  return { order, calls, text: order.map((o) => ('text' in o ? o.text : '')).join(''), ending };
}

const ask: ChatMessage[] = [
  { role: 'system', content: 'Use the tools.' },
  { role: 'user', content: 'Weather in Paris?' },
];

const paris: StandInCall = { name: 'get_weather', arguments: '{"city":"Paris","units":"metric"}' };

let standIn: AnyStandIn | undefined;
afterEach(async () => {
  clearModelCache();
  await standIn?.close();
  standIn = undefined;
});

async function start(k: Kind, options: Record<string, unknown>) {
  standIn = await k.start();
  standIn.set(options);
  return { s: standIn, provider: k.config(standIn.url) };
}

describe.each(kinds)('$kind: tool calls in its own form', (k) => {
  it('streams one call whole (arguments in fragments where the provider fragments them), ending with tool_calls', async () => {
    const { s, provider } = await start(k, { mode: 'tool-calls', calls: [paris], fragmentSize: 3 });
    const seen = await chatWith(provider, ask, TOOLS);
    expect(seen.ending).toEqual({ ok: true, finish: 'tool_calls' });
    expect(seen.calls).toHaveLength(1);
    expect(seen.calls[0]).toMatchObject({ name: 'get_weather', arguments: { city: 'Paris', units: 'metric' } });
    expect(seen.calls[0]!.id).toMatch(/\S/);
    expect(s.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('two calls in one turn, after some text, arrive in order; a call without arguments has {}', async () => {
    const { provider } = await start(k, {
      mode: 'tool-calls',
      reply: ['Let me ', 'check.'],
      calls: [paris, { name: 'get_time', arguments: k.kind === 'anthropic' ? '' : '{}' }],
    });
    const seen = await chatWith(provider, ask, TOOLS);
    expect(seen.ending).toEqual({ ok: true, finish: 'tool_calls' });
    expect(seen.order.map((o) => ('text' in o ? o.text : o.call.name))).toEqual(['Let me check.', 'get_weather', 'get_time']);
    expect(seen.calls[1]!.arguments).toEqual({});
    expect(new Set(seen.calls.map((c) => c.id)).size).toBe(2);
  });

  it('a call whose arguments are not a JSON object ends the reply with an error, not a crash', async () => {
    const broken: StandInCall =
      k.kind === 'gemini' ? { name: 'get_weather', arguments: '', rawArguments: ['Paris'] } : k.kind === 'ollama' ? { name: 'get_weather', arguments: '', rawArguments: '{"city": "Par' } : { name: 'get_weather', arguments: '{"city": "Par' };
    const { provider } = await start(k, { mode: 'tool-calls', calls: [broken] });
    const seen = await chatWith(provider, ask, TOOLS);
    expect(seen.calls).toEqual([]);
    expect(seen.ending.ok).toBe(false);
    expect((seen.ending as { message: string }).message).toMatch(/sent a call of tool "get_weather" whose arguments are not (valid JSON|a JSON object)/);
  });

  it('the tool history reaches the provider in its own form, and the loop goes on to the answer', async () => {
    const { s, provider } = await start(k, { mode: 'tool-calls', calls: [paris] });
    const first = await chatWith(provider, ask, TOOLS);
    const call = first.calls[0]!;
    const history: ChatMessage[] = [
      ...ask,
      { role: 'assistant', content: '', toolCalls: [call] },
      { role: 'tool', toolCallId: call.id, name: 'get_weather', content: '18 °C, sunny' },
    ];
    const second = await chatWith(provider, history, TOOLS);
    // The stand-in refuses a history not in its provider's form (see the fixtures): this answer means it was accepted.
    expect(second.ending).toEqual({ ok: true, finish: 'stop' });
    expect(second.text).toBe('Results: 18 °C, sunny');
    expect(second.calls).toEqual([]);
    const body = s.requests.filter((r) => r.method === 'POST').at(-1)!.body;
    expectHistory(k.kind, body, call);
  });

  it('two results answering two calls of one turn go back together, each to its own call', async () => {
    const oslo: StandInCall = { name: 'get_weather', arguments: '{"city":"Oslo"}' };
    const { provider } = await start(k, { mode: 'tool-calls', calls: [paris, oslo] });
    const first = await chatWith(provider, ask, TOOLS);
    const [a, b] = first.calls;
    const second = await chatWith(
      provider,
      [
        ...ask,
        { role: 'assistant', content: 'Checking both.', toolCalls: [a!, b!] },
        { role: 'tool', toolCallId: a!.id, content: 'sunny' },
        { role: 'tool', toolCallId: b!.id, content: 'snow' },
      ],
      TOOLS,
    );
    // Names come from the calls when a result has none (Gemini and Ollama need them); the stand-in checks the pairing.
    expect(second.ending).toEqual({ ok: true, finish: 'stop' });
    expect(second.text).toBe('Results: sunny | snow');
  });

  it('the tools and a named tool choice go out in its own form', async () => {
    const { s, provider } = await start(k, { mode: 'tool-calls', calls: [paris] });
    await chatWith(provider, ask, { tools: [WEATHER, TIME], toolChoice: { name: 'get_weather' } });
    expectTools(k.kind, s.requests.at(-1)!.body);
  });

  it('an empty tool list offers no tools: the request carries none of the tool fields (OpenAI refuses `tools: []`)', async () => {
    const { s, provider } = await start(k, {});
    const seen = await chatWith(provider, ask, { tools: [], toolChoice: 'auto' });
    expect(seen.ending).toMatchObject({ ok: true });
    const body = s.requests.at(-1)!.body as Record<string, unknown>;
    for (const field of ['tools', 'tool_choice', 'toolConfig']) expect(body[field], field).toBeUndefined();
  });
});

function expectTools(kind: Kind['kind'], body: any) {
  switch (kind) {
    case 'openai-compatible':
      expect(body.tools).toEqual([
        { type: 'function', function: WEATHER },
        { type: 'function', function: TIME },
      ]);
      expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
      break;
    case 'ollama':
      // Ollama has no tool_choice: the tools are offered, the model decides.
      expect(body.tools).toEqual([
        { type: 'function', function: WEATHER },
        { type: 'function', function: TIME },
      ]);
      expect(body.tool_choice).toBeUndefined();
      break;
    case 'anthropic':
      expect(body.tools).toEqual([
        { name: 'get_weather', description: WEATHER.description, input_schema: WEATHER.parameters },
        { name: 'get_time', description: TIME.description, input_schema: TIME.parameters },
      ]);
      expect(body.tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
      break;
    case 'gemini':
      expect(body.tools).toEqual([
        {
          functionDeclarations: [
            { name: 'get_weather', description: WEATHER.description, parametersJsonSchema: WEATHER.parameters },
            { name: 'get_time', description: TIME.description, parametersJsonSchema: TIME.parameters },
          ],
        },
      ]);
      expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
      break;
  }
}

function expectHistory(kind: Kind['kind'], body: any, call: ToolCall) {
  const args = { city: 'Paris', units: 'metric' };
  switch (kind) {
    case 'openai-compatible':
      expect(body.messages.slice(2)).toEqual([
        { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(args) } }] },
        { role: 'tool', tool_call_id: call.id, content: '18 °C, sunny' },
      ]);
      break;
    case 'ollama':
      expect(body.messages.slice(2)).toEqual([
        { role: 'assistant', content: '', tool_calls: [{ id: call.id, function: { index: 0, name: 'get_weather', arguments: args } }] },
        { role: 'tool', content: '18 °C, sunny', tool_name: 'get_weather', tool_call_id: call.id },
      ]);
      break;
    case 'anthropic':
      expect(body.messages.slice(1)).toEqual([
        { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'get_weather', input: args }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18 °C, sunny' }] },
      ]);
      break;
    case 'gemini':
      expect(body.contents.slice(1)).toEqual([
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: '18 °C, sunny' } } }] },
      ]);
      break;
  }
}

describe('a model or runner that refuses tools', () => {
  it.each([
    ['ollama', () => startOllamaStandIn({ refuseTools: true }), 'qwen3', /model "qwen3" on Ollama at .* cannot use tools \(HTTP 400: registry\.ollama\.ai\/library\/qwen3:latest does not support tools\)/],
    ['openai-compatible', () => startOpenAiStandIn({ refuseTools: true }), 'gpt-test', /model "gpt-test" on .* cannot use tools \(HTTP 400: "auto" tool choice requires --enable-auto-tool-choice/],
    ['gemini', () => startGeminiStandIn({ refuseTools: true }), 'gemma-3-27b-it', /model "gemma-3-27b-it" on .* cannot use tools \(HTTP 400: Function calling is not enabled for models\/gemma-3-27b-it\)/],
  ] as const)('%s: one clear error naming the model', async (kind, startIt, model, message) => {
    standIn = (await startIt()) as AnyStandIn;
    const seen = await chatWith({ id: 'p', kind, baseUrl: standIn.url, model }, ask, TOOLS);
    expect(seen.ending.ok).toBe(false);
    expect((seen.ending as { message: string }).message).toMatch(message);
    // The same request without tools is served: the refusal is about tools only.
    const plain = await chatWith({ id: 'p', kind, baseUrl: standIn.url, model }, ask);
    expect(plain.ending).toEqual({ ok: true, finish: 'stop' });
  });
});

describe('Gemini 3 thought signatures', () => {
  it('the signature rides in the call id and goes back with the call, so the next request is accepted', async () => {
    const { s, provider } = await start(kinds[3]!, { mode: 'tool-calls', calls: [paris], thoughtSignature: 'CiQBzJ8Gm1dwf0Z+ab/c=' });
    const first = await chatWith(provider, ask, TOOLS);
    const call = first.calls[0]!;
    expect(call.id).toMatch(/^call_[0-9a-f]{8}_0\.CiQBzJ8Gm1dwf0Z\+ab\/c=$/);
    const second = await chatWith(provider, [...ask, { role: 'assistant', content: '', toolCalls: [call] }, { role: 'tool', toolCallId: call.id, content: 'sunny' }], TOOLS);
    expect(second.text).toBe('Results: sunny');
    expect(s.requests.at(-1)!.body.contents[1].parts[0]).toEqual({ functionCall: { name: 'get_weather', args: { city: 'Paris', units: 'metric' } }, thoughtSignature: 'CiQBzJ8Gm1dwf0Z+ab/c=' });
  });
});

describe('limits', () => {
  it.each(['openai-compatible', 'anthropic'] as const)('%s: arguments over 1 MiB for one call stop the reply with an error', async (kind) => {
    const k = kinds.find((x) => x.kind === kind)!;
    const huge = `{"text":"${'x'.repeat(1024 * 1024)}"}`;
    const { provider } = await start(k, { mode: 'tool-calls', calls: [{ name: 'get_weather', arguments: huge }], fragmentSize: 64 * 1024 });
    const seen = await chatWith(provider, ask, TOOLS);
    expect(seen.calls).toEqual([]);
    expect((seen.ending as { message: string }).message).toMatch(/sent arguments over 1 MiB for one call of tool "get_weather"; the desktop stopped the reply there/);
  });
});
