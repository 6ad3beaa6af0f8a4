/** A session whose model rewrote two files of a project and made one (decided at the desk, token approvals), for the Changes suites. */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { ScriptedModel } from '../fixtures/providers/scripted';
import type { AgentRelay } from './inProcess';

export const ORIGINAL = { 'README.md': '# project\n\nFirst words.\n', 'src/math.js': 'export const add = (a, b) => a - b;\n' };

/** `repo` reset to ORIGINAL, and the model scripted to rewrite README.md and src/math.js and make src/new.js (three calls in one step). */
export function scriptChanges(model: ScriptedModel, repo: string): void {
  for (const [path, text] of Object.entries(ORIGINAL)) writeFileSync(join(repo, path), text);
  rmSync(join(repo, 'src/new.js'), { force: true });
  model.script([
    {
      calls: [
        { name: 'write_file', arguments: { path: 'README.md', content: '# project\n\nNew words.\n' } },
        { name: 'write_file', arguments: { path: 'src/math.js', content: 'export const add = (a, b) => a + b;\n' } },
        { name: 'write_file', arguments: { path: 'src/new.js', content: 'export const two = 2;\n' } },
      ],
    },
    { text: ['Done.'] },
  ]);
}

/** A session (on `repo`, as scriptChanges) whose three writes the desk allowed; its id once idle. */
export async function changingSession(relay: AgentRelay, model: ScriptedModel, repo: string): Promise<string> {
  scriptChanges(model, repo);
  const id = await relay.start('Fix add and add two');
  for (let i = 0; i < 3; i++) {
    const waiting = await relay.until(id, (s) => s.pending.length === 1, `approval ${i + 1}`);
    expect((await relay.post(`/v1/agent/sessions/${id}/approvals/${waiting.pending[0].callId}`, { decision: 'allow' })).status).toBe(204);
  }
  await relay.until(id, (s) => s.status === 'idle', 'the turn to end');
  expect(model.failures).toEqual([]);
  return id;
}
