/** The OpenAI door's request parser on its own: what an OpenAI SDK sends becomes DeskRelay's chat request, or a 400 that says why. */
import { describe, expect, it } from 'vitest';
import { parseCompletionRequest } from '../../../server/src/doors/openai/request';
import { expectWeatherRound, refusal, weatherRound } from '../helpers';

describe('parseCompletionRequest', () => {
  it('maps developer to system, joins text parts, and streams only when stream is true', () => {
    const parsed = parseCompletionRequest({
      model: 'ignored',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hello, ' }, { type: 'text', text: 'there' }] },
      ],
    });
    expect(parsed.stream).toBe(false);
    expect(parsed.tools).toBeUndefined();
    expect(parsed.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello, there' },
    ]);
    expect(parseCompletionRequest({ messages: [{ role: 'user', content: 'hi' }], stream: true }).stream).toBe(true);
  });

  it('keeps an assistant turn of tool calls and links the tool result to it by id', () => {
    const parsed = parseCompletionRequest(
      weatherRound({ content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] }, { tool_call_id: 'call_1' }),
    );
    expectWeatherRound(parsed, 'call_1', { toolCallId: 'call_1' });
  });

  it('refuses what it cannot carry, naming the field', () => {
    expect(refusal(parseCompletionRequest, []).message).toMatch(/JSON object/);
    expect(refusal(parseCompletionRequest, { messages: [{ role: 'user', content: 'x' }], stream: 'yes' }).message).toBe('stream must be a boolean.');
    expect(refusal(parseCompletionRequest, { messages: [{ role: 'function', content: 'x' }] }).message).toMatch(/deprecated functions API/);
    expect(refusal(parseCompletionRequest, { messages: [{ role: 'tool', content: 'x' }] }).message).toMatch(/messages\[0\]\.tool_call_id/);
    expect(refusal(parseCompletionRequest, { messages: [{ role: 'robot', content: 'x' }] }).status).toBe(400);
  });
});
