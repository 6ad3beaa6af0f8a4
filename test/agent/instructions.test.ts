/**
 * Project instructions (issue 40): the folder's AGENTS.md (else CLAUDE.md, else
 * .github/copilot-instructions.md) joins the session's system message, read through the
 * Workspace so its deny list and link rules hold; the snapshot and the list say which file.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { startAgentRelay, type AgentRelay } from './inProcess';

let model: ScriptedModel;
const cleanup: (() => Promise<void> | void)[] = [];
beforeAll(async () => {
  model = await startScriptedModel();
});
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
  model.failures.length = 0;
});
afterAll(() => model.close());

async function folderWith(files: Record<string, string>, links: Record<string, string> = {}): Promise<{ folder: string; relay: AgentRelay }> {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-instr-')));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(folder, path, '..'), { recursive: true });
    writeFileSync(join(folder, path), text);
  }
  for (const [path, target] of Object.entries(links)) symlinkSync(target, join(folder, path));
  const relay = await startAgentRelay([folder], model);
  cleanup.push(() => relay.close(), () => rmSync(folder, { recursive: true, force: true }));
  return { folder, relay };
}

/** Runs one turn; the system message the model received. */
async function systemSeen(relay: AgentRelay): Promise<{ system: string; snapshot: any; listed: any }> {
  let system = '';
  model.script([{ check: (body) => void (system = body.messages[0].role === 'system' ? body.messages[0].content : ''), text: ['Done.'] }]);
  const id = await relay.start('What are the rules here?');
  const snapshot = await relay.until(id, (s) => s.status === 'idle', 'the turn to end');
  expect(model.failures).toEqual([]);
  const listed = (await relay.get('/v1/agent/sessions')).json.sessions.find((s: any) => s.id === id);
  return { system, snapshot, listed };
}

describe('project instructions', () => {
  it("AGENTS.md reaches the model's system message; the snapshot and the list name it", async () => {
    const { relay } = await folderWith({ 'AGENTS.md': 'Run `make check` before you say you are done.\n', 'CLAUDE.md': 'Not this one.\n' });
    const { system, snapshot, listed } = await systemSeen(relay);
    expect(system).toContain('You are a coding agent');
    expect(system).toContain('from its AGENTS.md');
    expect(system).toContain('Run `make check` before you say you are done.');
    expect(system).not.toContain('Not this one.');
    expect(snapshot.instructions).toBe('AGENTS.md');
    expect(listed.instructions).toBe('AGENTS.md');
  });

  it('an AGENTS.md linked to .env is refused like any read: the secret never reaches the model, CLAUDE.md is used', async () => {
    const { relay } = await folderWith({ '.env': 'OPENAI_API_KEY=sk-live-secret-1234\n', 'CLAUDE.md': 'Use tabs.\n' }, { 'AGENTS.md': '.env' });
    const { system, snapshot } = await systemSeen(relay);
    expect(system).not.toContain('sk-live-secret-1234');
    expect(system).toContain('Use tabs.');
    expect(snapshot.instructions).toBe('CLAUDE.md');
  });

  it('.github/copilot-instructions.md when neither exists; a long file is cut at 32 KiB and says so', async () => {
    const long = `${'x'.repeat(40 * 1024)}TAIL-MARK`;
    const { relay } = await folderWith({ '.github/copilot-instructions.md': long });
    const { system, snapshot } = await systemSeen(relay);
    expect(snapshot.instructions).toBe('.github/copilot-instructions.md');
    expect(system).not.toContain('TAIL-MARK');
    expect(system).toContain('[cut: .github/copilot-instructions.md is longer than 32768 bytes');
  });

  it('no file: no instructions named', async () => {
    const { relay } = await folderWith({ 'README.md': '# x\n' });
    const { system, snapshot } = await systemSeen(relay);
    expect(system).not.toContain("project's own instructions");
    expect(snapshot.instructions).toBeUndefined();
  });
});
