/** ThinkWrapper: reasoning pieces wrapped in one <think>…</think> segment, closed before the answer and at the end (SPEC, CONTRACT §6). */
import { expect, it } from 'vitest';
import { ThinkWrapper } from '../../server/src/chat/specReply';

it('opens <think> once for a run of reasoning and closes it before the next text', () => {
  const think = new ThinkWrapper();
  expect([think.push('reasoning', 'a'), think.push('reasoning', 'b'), think.push('text', 'c'), think.push('text', 'd')]).toEqual(['<think>a', 'b', '</think>c', 'd']);
  expect(think.finish()).toBe('');
});

it('a reply that ends inside reasoning is closed by finish(), once', () => {
  const think = new ThinkWrapper();
  think.push('reasoning', 'a');
  expect(think.finish()).toBe('</think>');
  expect(think.finish()).toBe('');
});

it('an empty piece sends nothing and changes nothing', () => {
  const think = new ThinkWrapper();
  expect(think.push('reasoning', '')).toBe('');
  expect(think.push('text', 'x')).toBe('x');
  expect(think.finish()).toBe('');
});
