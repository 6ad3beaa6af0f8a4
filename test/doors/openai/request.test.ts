/** The OpenAI door's request parser on its own: what an OpenAI SDK sends becomes DeskRelay's chat request, or a 400 that says why. */
import { describe, expect, it } from 'vitest';
import { parseCompletionRequest } from '../../../server/src/doors/openai/request';
import { refusal } from '../helpers';

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
    const parsed = parseCompletionRequest({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'Rain' },
      ],
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
    });
    expect(parsed.tools?.tools?.map((t) => t.name)).toEqual(['weather']);
    expect(parsed.messages[1]!.toolCalls).toEqual([{ id: 'call_1', name: 'weather', arguments: { city: 'Oslo' } }]);
    expect(parsed.messages[2]).toMatchObject({ role: 'tool', content: 'Rain', toolCallId: 'call_1' });
  });

  it('refuses what it cannot carry, naming the field', () => {
    expect(refusal(parseCompletionRequest, []).message).toMatch(/JSON object/);
    expect(refusal(parseCompletionRequest, { messages: [{ role: 'user', content: 'x' }], stream: 'yes' }).message).toBe('stream must be a boolean.');
    expect(refusal(parseCompletionRequest, { messages: [{ role: 'function', content: 'x' }] }).message).toMatch(/deprecated functions API/);
    expect(refusal(parseCompletionRequest, { messages: [{ role: 'tool', content: 'x' }] }).message).toMatch(/messages\[0\]\.tool_call_id/);
    expect(refusal(parseCompletionRequest, { messages: [{ role: 'robot', content: 'x' }] }).status).toBe(400);
  });
});
