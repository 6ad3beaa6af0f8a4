/**
 * SpecReply's `done.content` (SPEC: the done event repeats the whole reply): exactly the deltas
 * sent, whatever they hold, however long the reply. The reply is kept in a buffer of its own
 * rather than a growing string (server/src/chat/specReply.ts ReplyText), so these cover its
 * encoding and its growth.
 */
import { expect, it } from 'vitest';
import type { TerminalEvent } from '../../server/src/chat/events';
import { SpecReply } from '../../server/src/chat/specReply';

function reply() {
  const tokens: string[] = [];
  const terminals: TerminalEvent[] = [];
  const sink = new SpecReply({ token: (d) => void tokens.push(d), flush: () => undefined, terminal: (e) => void terminals.push(e) });
  return { sink, tokens, terminals };
}

it('done.content is the deltas sent, character for character: astral, combining, CJK, a lone surrogate, NUL', () => {
  const { sink, tokens, terminals } = reply();
  const pieces = ['Grüße ', '🌍🚀', ' e\u0301', '日本語', ' \ud800 lone', ' \udfff', '\u0000end'];
  sink.piece('reasoning', 'thinking… ');
  for (const p of pieces) sink.piece('text', p);
  sink.end({ ok: true, finish: 'stop' });
  expect(terminals).toEqual([{ type: 'done', content: tokens.join('') }]);
  expect(tokens.join('')).toBe(`<think>thinking… </think>${pieces.join('')}`);
});

it('a long reply in many small pieces (the buffer grows many times) comes back whole', () => {
  const { sink, tokens, terminals } = reply();
  for (let i = 0; i < 20_000; i++) sink.piece('text', i % 7 === 0 ? `${i}😀 ` : `w${i} `);
  sink.end({ ok: true, finish: 'stop' });
  expect(terminals).toHaveLength(1);
  expect((terminals[0] as { content: string }).content).toBe(tokens.join(''));
  expect(tokens).toHaveLength(20_000);
});

it('an empty reply ends with empty content; one ending inside reasoning is closed in the content too', () => {
  const empty = reply();
  empty.sink.end({ ok: true, finish: 'stop' });
  expect(empty.terminals).toEqual([{ type: 'done', content: '' }]);
  const open = reply();
  open.sink.piece('reasoning', 'hmm');
  open.sink.end({ ok: true, finish: 'stop' });
  expect(open.terminals).toEqual([{ type: 'done', content: '<think>hmm</think>' }]);
});
