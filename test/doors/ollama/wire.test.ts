/** Ollama's wire format as its Go server writes it (ollama/ollama api/types.go, server/routes.go; Go's encoding/json escaping; time.Time's RFC3339Nano). */
import { describe, expect, it } from 'vitest';
import { errorLine, goJson, goTime, OllamaReply } from '../../../server/src/doors/ollama/wire';

describe('Ollama wire helpers', () => {
  it('goJson escapes <, >, & and U+2028/U+2029 as encoding/json does', () => {
    expect(goJson({ a: '<b>&\u2028\u2029' })).toBe('{"a":"\\u003cb\\u003e\\u0026\\u2028\\u2029"}');
  });

  it('goTime is RFC3339Nano in UTC with trailing zeros trimmed', () => {
    const ms = Date.UTC(2025, 5, 5, 10, 11, 12, 123);
    expect(goTime(ms, 456789n)).toBe('2025-06-05T10:11:12.123456789Z');
    expect(goTime(ms, 400000n)).toBe('2025-06-05T10:11:12.1234Z');
    expect(goTime(Date.UTC(2025, 5, 5, 10, 11, 12, 0), 0n)).toBe('2025-06-05T10:11:12Z');
  });

  it('an error after the stream began is one {"error"} line', () => {
    expect(errorLine('a <b>')).toBe('{"error":"a \\u003cb\\u003e"}\n');
  });
});

describe('OllamaReply', () => {
  it('chat lines carry message.content or message.thinking; the done line says how it ended and counts the pieces', () => {
    const reply = new OllamaReply('chat', 'llama3');
    const thought = JSON.parse(reply.pieceLine('reasoning', 'hmm'));
    expect(Object.keys(thought)).toEqual(['model', 'created_at', 'message', 'done']);
    expect(thought).toMatchObject({ model: 'llama3', message: { role: 'assistant', content: '', thinking: 'hmm' }, done: false });
    const text = reply.pieceLine('text', 'Hi');
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text).message).toEqual({ role: 'assistant', content: 'Hi' });
    const done = JSON.parse(reply.doneLine('length'));
    expect(done).toMatchObject({ message: { role: 'assistant', content: '' }, done: true, done_reason: 'length', eval_count: 2 });
    expect(done.total_duration).toBeGreaterThan(0);
  });

  it('generate lines carry response; a whole answer holds what was kept and its tool calls; tool_calls ends as "stop"', () => {
    const generate = new OllamaReply('generate', 'm');
    expect(JSON.parse(generate.pieceLine('text', 'Hi'))).toMatchObject({ response: 'Hi', done: false });
    const chat = new OllamaReply('chat', 'm');
    chat.keep('text', 'Look');
    chat.keep('text', 'ing');
    chat.keepToolCall({ id: 'c1', name: 'weather', arguments: { city: 'Oslo' } });
    expect(chat.whole('tool_calls')).toMatchObject({
      message: { role: 'assistant', content: 'Looking', tool_calls: [{ id: 'c1', function: { index: 0, name: 'weather', arguments: { city: 'Oslo' } } }] },
      done: true,
      done_reason: 'stop',
      eval_count: 2,
    });
    expect(new OllamaReply('chat', 'm').loaded('unload')).toMatchObject({ message: { content: '' }, done: true, done_reason: 'unload' });
  });
});
