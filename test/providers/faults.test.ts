/**
 * What a mapper throws on a broken stream, as the phone reads it: worded by the call with the
 * provider's label and the key taken out, and whatever the same line held before the fault still
 * handed over first, as the provider sent it. The lines are each provider's own chunk form with
 * one field broken; a raw stand-in writes them as the provider frames them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createAdapter, ProviderError } from '../../server/src/providers';
import type { ProviderConfig } from '../../server/src/providers/types';
import { startStandIn, type StandIn } from '../fixtures/providers/standin';
import { deps, FAKE_KEY, run } from './helpers';

let standIn: StandIn | undefined;
afterEach(() => standIn?.close());

/** A stand-in answering every request with these bytes, framed as `type` says. */
async function answering(type: string, body: string): Promise<StandIn> {
  standIn = await startStandIn((_req, res) => {
    res.writeHead(200, { 'Content-Type': type });
    res.end(body);
  });
  return standIn;
}

const sse = (...events: object[]) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
const chunk = (delta: object, finish: string | null = null) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });

describe('a broken stream, through the call', () => {
  it('hands over the text of the line that also holds a broken tool call, then fails naming the provider (OpenAI-compatible)', async () => {
    const s = await answering('text/event-stream', sse(chunk({ role: 'assistant', content: 'Looking' }), chunk({ content: ' now', tool_calls: { index: 0 } })));
    const config: ProviderConfig = { id: 'p', kind: 'openai-compatible', baseUrl: `${s.url}/v1`, model: 'm' };
    const out = await run(createAdapter(config, deps()));
    expect(out.text).toBe('Looking now');
    expect(out.error).toBeInstanceOf(ProviderError);
    expect(out.error!.message).toBe(`OpenAI-compatible server at ${s.url}/v1 sent delta.tool_calls that is not a list`);
  });

  it('hands over the thinking and text of an Ollama line whose tool_calls is not a list, then fails', async () => {
    const line = { model: 'm', created_at: '2026-11-29T00:00:00Z', message: { role: 'assistant', thinking: 'Hm.', content: 'Sure', tool_calls: 'get_weather' }, done: false };
    const s = await answering('application/x-ndjson', `${JSON.stringify(line)}\n`);
    const out = await run(createAdapter({ id: 'p', kind: 'ollama', baseUrl: s.url, model: 'm' }, deps()));
    expect(out.pieces).toEqual([
      { kind: 'reasoning', text: 'Hm.' },
      { kind: 'text', text: 'Sure' },
    ]);
    expect(out.error!.message).toBe(`Ollama at ${s.url} sent message.tool_calls that is not a list`);
  });

  it('fails an Anthropic reply that stops inside a tool call', async () => {
    const events = [
      { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-test', stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
      { type: 'message_stop' },
    ];
    const s = await answering('text/event-stream', events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join(''));
    const out = await run(createAdapter({ id: 'p', kind: 'anthropic', baseUrl: s.url, model: 'claude-test' }, deps({ key: FAKE_KEY })));
    expect(out.error!.message).toBe(`Anthropic at ${s.url} ended the reply inside a tool call`);
  });

  it('takes the key out of broken tool arguments it quotes, before cutting them short', async () => {
    // The quote is cut at 120 characters: here 6 characters into the key, too few for any
    // redaction to recognise once cut.
    const args = `{"note": "${'y'.repeat(104)}${FAKE_KEY}" oops`;
    const s = await answering('text/event-stream', sse(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: args } }] }), chunk({}, 'tool_calls')));
    const config: ProviderConfig = { id: 'p', kind: 'openai-compatible', baseUrl: `${s.url}/v1`, model: 'm' };
    const out = await run(createAdapter(config, deps({ key: FAKE_KEY })));
    const message = out.error!.message;
    expect(message.startsWith(`OpenAI-compatible server at ${s.url}/v1 sent a call of tool "get_weather" whose arguments are not valid JSON: {"note": "`)).toBe(true);
    expect(message).not.toContain(FAKE_KEY.slice(0, 6));
    expect(message.endsWith('…')).toBe(true);
  });
});
