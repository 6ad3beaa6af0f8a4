/** The Ollama door's request parsers on their own: Ollama's /api/chat and /api/generate bodies as DeskRelay chat requests (ollama/ollama api/types.go). */
import { describe, expect, it } from 'vitest';
import { parseOllamaChat, parseOllamaGenerate } from '../../../server/src/doors/ollama/request';
import { expectWeatherRound, refusal, weatherRound } from '../helpers';

describe('parseOllamaChat', () => {
  it('streams unless stream is false, reads roles case-insensitively, and takes a missing content as empty', () => {
    const parsed = parseOllamaChat({ model: 'x', messages: [{ role: 'System', content: 'Be brief.' }, { role: 'USER', content: 'hi' }, { role: 'assistant' }, { role: 'user', content: 'again' }] });
    expect(parsed.stream).toBe(true);
    expect(parsed.unload).toBe(false);
    expect(parsed.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'Be brief.'],
      ['user', 'hi'],
      ['assistant', ''],
      ['user', 'again'],
    ]);
    expect(parseOllamaChat({ messages: [{ role: 'user', content: 'hi' }], stream: false }).stream).toBe(false);
  });

  it('no messages means load the model; keep_alive 0 (any spelling) means unload it', () => {
    expect(parseOllamaChat({ model: 'x' })).toEqual({ messages: [], stream: true, unload: false });
    for (const keepAlive of [0, '0', '0s', '0m', ' 0.0s ']) expect(parseOllamaChat({ messages: [], keep_alive: keepAlive }).unload).toBe(true);
    for (const keepAlive of [5, '5m', '10s', -1]) expect(parseOllamaChat({ messages: [], keep_alive: keepAlive }).unload).toBe(false);
  });

  it('keeps tool calls (arguments an object) and tool results with their tool_name', () => {
    const parsed = parseOllamaChat(weatherRound({ content: '', tool_calls: [{ function: { name: 'weather', arguments: { city: 'Oslo' } } }] }, { tool_name: 'weather' }));
    expectWeatherRound(parsed, 'call_1_0', { name: 'weather' });
  });

  it('refuses what it cannot carry, naming the field', () => {
    expect(refusal(parseOllamaChat, 'hi').message).toMatch(/JSON object/);
    expect(refusal(parseOllamaChat, { messages: {} }).message).toMatch(/messages must be an array/);
    expect(refusal(parseOllamaChat, { messages: [{ role: 'robot', content: 'x' }] }).message).toBe('messages[0].role must be one of system, user, assistant, tool.');
    expect(refusal(parseOllamaChat, { messages: [{ role: 'user', content: 3 }] }).message).toBe('messages[0].content must be a string.');
    expect(refusal(parseOllamaChat, { messages: [{ role: 'assistant', content: 'x', images: ['aGk='] }] }).message).toMatch(/only user messages may carry images/);
    expect(refusal(parseOllamaChat, { messages: [{ role: 'user', content: 'x', images: ['aGVsbG8='] }] }).message).toMatch(/^messages\[0\]\.images\[0\] /);
    expect(refusal(parseOllamaChat, { messages: [], stream: 'no' }).message).toBe('stream must be a boolean.');
  });
});

describe('parseOllamaGenerate', () => {
  it('system and prompt become a system and a user turn; no prompt means load the model', () => {
    expect(parseOllamaGenerate({ system: 'Be brief.', prompt: 'hi', stream: false })).toEqual({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
      stream: false,
      unload: false,
    });
    expect(parseOllamaGenerate({ model: 'x', keep_alive: 0 })).toEqual({ messages: [], stream: true, unload: true });
    expect(refusal(parseOllamaGenerate, { prompt: 1 }).message).toBe('prompt must be a string.');
    expect(refusal(parseOllamaGenerate, { prompt: 'x', system: [] }).message).toBe('system must be a string.');
  });
});
