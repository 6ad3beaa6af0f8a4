// The tools the model gets, on a real folder: their answers, their refusals (as results the
// model reads), the approval each asks for, and the session policy.
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import { DEFAULT_LIMITS } from '../../server/src/agent/limits';
import { capResult } from '../../server/src/agent/turn';
import { ApprovalGate } from '../../server/src/agent/gate';
import { TOOLS, type ToolContext } from '../../server/src/agent/tools';
import { startScriptedModel, toolResults } from '../fixtures/providers/scripted';
import { startAgentRelay } from './inProcess';

let dir: string;
let ctx: ToolContext;
const tool = (name: string) => TOOLS.find((t) => t.spec.name === name)!;
const call = async (name: string, input: Record<string, unknown>) => (await tool(name).prepare(input, ctx)).run();

beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-tools-')));
  writeFileSync(join(dir, 'a.txt'), 'one\ntwo\nthree\nfour\n');
  writeFileSync(join(dir, 'dup.txt'), 'x\nx\n');
  ctx = { workspace: new NodeWorkspace({ folder: dir, configDir: join(dir, 'cfg') }), limits: DEFAULT_LIMITS, signal: new AbortController().signal };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tools', () => {
  it('offers exactly the issue\'s tools, with the approvals it names', () => {
    expect(TOOLS.map((t) => `${t.spec.name}:${t.approval}`)).toEqual([
      'list_files:never', 'read_file:never', 'search:never', 'diagnostics:never', 'git_diff:never', 'edit_file:edit', 'write_file:edit', 'run_command:command',
    ]);
  });

  it('read_file numbers lines and reads a range', async () => {
    expect(await call('read_file', { path: 'a.txt', startLine: 2, endLine: 3 })).toBe('a.txt (lines 2-3 of 4)\n2: two\n3: three');
    await expect(call('read_file', { path: 'a.txt', startLine: 3, endLine: 2 })).rejects.toThrow(/endLine/);
  });

  it('edit_file shows the diff first and writes only when run; a non-unique or missing "old" is refused', async () => {
    const prepared = await tool('edit_file').prepare({ path: 'a.txt', old: 'two\n', new: 'TWO\n' }, ctx);
    expect(prepared.diff).toContain('-two\n+TWO\n');
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('one\ntwo\nthree\nfour\n');
    await prepared.run();
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('one\nTWO\nthree\nfour\n');
    await expect(tool('edit_file').prepare({ path: 'dup.txt', old: 'x', new: 'y' }, ctx)).rejects.toThrow(/more than once/);
    await expect(tool('edit_file').prepare({ path: 'a.txt', old: 'zzz', new: 'y' }, ctx)).rejects.toThrow(/does not occur/);
  });

  it('an approved edit is not applied over a file that changed after the diff was shown', async () => {
    const prepared = await tool('write_file').prepare({ path: 'a.txt', content: 'new\n' }, ctx);
    writeFileSync(join(dir, 'a.txt'), 'changed meanwhile\n');
    await expect(prepared.run()).rejects.toThrow(/changed since the diff/);
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('changed meanwhile\n');
    const edit = await tool('edit_file').prepare({ path: 'a.txt', old: 'changed', new: 'edited' }, ctx);
    writeFileSync(join(dir, 'a.txt'), 'changed again\n');
    await expect(edit.run()).rejects.toThrow(/changed since the diff/);
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('changed again\n');
  });

  it('run_command says the exit code and output', async () => {
    expect(await call('run_command', { command: 'echo hi; exit 4' })).toBe('Exit code 4.\nhi\n');
  });

  it('caps result text at the byte limit with a note, never inside a character', () => {
    const capped = capResult('é'.repeat(100), 51);
    expect(capped.startsWith('é'.repeat(25) + '\n[cut: the result was 200 bytes')).toBe(true);
    expect(capResult('short', 64)).toBe('short');
  });
});

describe('ApprovalGate', () => {
  it('allow_session grants every edit, but a command only for that exact line and until a file changes', async () => {
    const decided: string[] = [];
    const p = new ApprovalGate({ asked: () => {}, decided: (callId, d) => decided.push(`${callId}=${d}`) });
    const answer = async (kind: 'edit' | 'command', key: string | undefined, decision: 'allow_session' | 'deny') => {
      const callId = p.newCallId();
      const asked = p.ask(kind, key, { callId, tool: kind === 'edit' ? 'edit_file' : 'run_command', input: {}, ...(key ? { command: key } : { diff: 'd' }) });
      p.decide(callId, decision);
      return asked;
    };
    expect(p.needsApproval('never')).toBe(false);
    expect(p.needsApproval('edit')).toBe(true);
    await answer('edit', undefined, 'allow_session');
    expect(p.needsApproval('edit')).toBe(false);
    expect(p.needsApproval('command', 'npm test')).toBe(true);
    await answer('command', 'npm test', 'allow_session');
    expect(p.needsApproval('command', 'npm test')).toBe(false);
    expect(p.needsApproval('command', 'npm test; rm -rf /')).toBe(true);
    p.filesChange();
    expect(p.needsApproval('command', 'npm test')).toBe(true);
    expect(p.needsApproval('edit')).toBe(false);
    expect(decided).toEqual(['c1=allow_session', 'c2=allow_session']);
    expect(() => p.decide('c1', 'allow')).toThrow();
  });
});

describe('a tool call with a wrong argument', () => {
  it('is told to the model as that call\'s result, and the turn goes on', async () => {
    const model = await startScriptedModel();
    const relay = await startAgentRelay([dir], model);
    try {
      let results: { content: string }[] = [];
      model.script([
        {
          calls: [
            { name: 'read_file', arguments: {} },
            { name: 'read_file', arguments: { path: 'a.txt', startLine: 0 } },
            { name: 'search', arguments: { query: 'one', regex: 'yes' } },
            { name: 'list_files', arguments: { path: 7 } },
          ],
        },
        { check: (body) => void (results = toolResults(body)), text: ['I will fix my call.'] },
      ]);
      const id = await relay.start('read it');
      await relay.until(id, (s) => s.status === 'idle', 'the turn to end');
      expect(model.failures).toEqual([]);
      expect(results.map((r) => r.content)).toEqual([
        '"path" is required.',
        '"startLine" must be a line number (1 or more).',
        '"regex" must be true or false.',
        '"path" must be a string.',
      ]);
    } finally {
      await relay.close();
      await model.close();
    }
  });
});
