/**
 * Context that fits the model (issue 40): with a 4k-token context (the provider record's
 * "contextLength"; the scripted model's server has no /models listing), the oldest tool results
 * become one-line notes before a call would not fit, then the model is asked for a summary of
 * the session so far, and the session goes on from it; `context` events say what happened.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens, promptBudget } from '../../server/src/agent/turn';
import { startScriptedModel, toolResults, type ScriptedModel } from '../fixtures/providers/scripted';
import { startAgentRelay, type AgentRelay } from './inProcess';
import { Follower } from './support';

let model: ScriptedModel;
let relay: AgentRelay;
let folder: string;
const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} line ${i} ${'x'.repeat(40)}`).join('\n') + '\n';

beforeAll(async () => {
  folder = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-ctx-')));
  // About 6,000 characters each (1,500 tokens): two do not fit beside the tools in 3,072 tokens.
  writeFileSync(join(folder, 'a.txt'), lines(100, 'alpha'));
  writeFileSync(join(folder, 'b.txt'), lines(100, 'beta'));
  writeFileSync(join(folder, 'c.txt'), lines(100, 'gamma'));
  model = await startScriptedModel();
  relay = await startAgentRelay([folder], model);
  relay.useProvider({ id: 'scripted', kind: 'openai-compatible', baseUrl: `${model.url}/v1`, model: 'gpt-4o', contextLength: 4096 });
});
afterAll(async () => {
  await relay?.close();
  await model?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** What a request to the model weighs, as the relay estimates it (4 characters a token). */
const weight = (body: { messages: any[]; tools?: any[] }) =>
  estimateTokens(
    body.messages.map((m) => ({ role: m.role, content: m.content ?? '', ...(m.tool_calls ? { toolCalls: m.tool_calls.map((c: any) => ({ id: c.id, name: c.function.name, arguments: JSON.parse(c.function.arguments) })) } : {}) })),
    (body.tools ?? []).map((t: any) => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters })),
  );

describe('a conversation that outgrows a 4k context', () => {
  it('drops old tool results with notes before the call, then asks for a summary, and goes on', async () => {
    const weights: number[] = [];
    let summaryAsked: any;
    model.script([
      { calls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
      { check: (body) => expect(toolResults(body)[0]!.content).toContain('alpha line 99'), calls: [{ name: 'read_file', arguments: { path: 'b.txt' } }] },
      {
        // a.txt's result is a note now; b.txt's is whole.
        check: (body) => {
          weights.push(weight(body));
          const results = toolResults(body);
          expect(results[0]!.content).toBe('read a.txt, 101 lines: dropped to save room');
          expect(results[1]!.content).toContain('beta line 99');
        },
        calls: [{ name: 'read_file', arguments: { path: 'c.txt' } }, { name: 'read_file', arguments: { path: 'b.txt' } }],
      },
      {
        // Both results of the last reply do not fit even with every older one dropped: the summary request, without tools.
        check: (body) => {
          summaryAsked = body;
          expect(body.tools).toBeUndefined();
          expect(body.messages).toHaveLength(2);
          expect(body.messages[1].content).toContain('Write a summary of the session so far');
          expect(body.messages[1].content).toContain('read_file');
        },
        text: ['Task: look at three files. a.txt has alpha lines, b.txt beta lines, c.txt gamma lines. Left: answer.'],
      },
      {
        check: (body) => {
          weights.push(weight(body));
          expect(body.messages[1].role).toBe('user');
          expect(body.messages[1].content).toContain('Task: look at three files.');
          expect(body.messages.some((m: any) => typeof m.content === 'string' && m.content.includes('alpha line 99'))).toBe(false);
        },
        text: ['All three files are lists of lines.'],
      },
    ]);
    const id = await relay.start('Look at a.txt, b.txt and c.txt and tell me what they hold.');
    const events = new Follower(relay.url, relay.token, `/v1/agent/sessions/${id}/events`);
    await events.waitStatus('idle');
    events.close();
    expect(model.failures).toEqual([]);
    expect(summaryAsked).toBeDefined();
    for (const w of weights) expect(w).toBeLessThanOrEqual(promptBudget(4096));
    const context = events.of('context');
    expect(context[0]).toMatchObject({ dropped: ['read a.txt, 101 lines: dropped to save room'] });
    expect(context.at(-1)).toMatchObject({ summarised: true, message: expect.stringContaining('Earlier steps were summarised') });
    // The summary's words are the model's scratch work: not shown as the agent's text.
    expect(events.of('text').map((e) => e.delta).join('')).toBe('All three files are lists of lines.');
  });
});
