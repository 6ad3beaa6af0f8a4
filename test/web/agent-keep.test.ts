/**
 * Issue 40 on the phone (Chromium, 375 px, the real CLI): the session view says which project
 * instructions the agent follows; New session's worktree switch starts a session in its own
 * worktree, whose view offers "Merge into <branch>": the merge is a command card, and once
 * allowed the work is in the project.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { agentPhone, axe, phone, useAgentDeskSuite } from './harness';

const suite = useAgentDeskSuite('deskrelay-agent-keep-web-', { 'AGENTS.md': 'Use tabs.\n', 'src/a.txt': 'one\n' });
const desk = suite.desk;
beforeAll(() => {
  for (const [k, v] of [['user.name', 'Desk User'], ['user.email', 'desk@example.com']]) execFileSync('git', ['config', k!, v!], { cwd: desk.repo });
});

describe('issue 40 on the phone', () => {
  it('a worktree session: the switch, "follows AGENTS.md", Merge into <branch> as a command card, the work merged', async () => {
    const branch = execFileSync('git', ['symbolic-ref', '--short', 'HEAD'], { cwd: desk.repo, encoding: 'utf8' }).trim();
    desk.model.script([{ calls: [{ name: 'write_file', arguments: { path: 'src/a.txt', content: 'two\n' } }] }, { text: ['Written.'] }]);
    const { page, context } = await phone(suite.browser);
    try {
      // Paired as a phone is (its own device and key), and allowed the agent at the desk.
      await agentPhone(page, desk);
      await page.getByRole('tab', { name: 'Agent' }).click();
      await page.getByRole('button', { name: 'New session' }).click();
      await page.getByLabel('What should it do?').fill('Write two into src/a.txt');
      await page.getByLabel(/Work in a worktree of its own/).check();
      expect(await axe(page)).toEqual([]);
      await page.getByRole('button', { name: 'Start' }).click();
      const card = page.locator('.approval:not(.decided)');
      await card.waitFor();
      await card.getByRole('button', { name: 'Allow', exact: true }).click();
      await expect.poll(() => page.locator('.agent-meta').textContent()).toContain('follows AGENTS.md');
      expect(await page.locator('.agent-meta').textContent()).toContain('deskrelay/');
      const merge = page.getByRole('button', { name: `Merge into ${branch}` });
      await expect.poll(() => merge.isEnabled()).toBe(true);
      expect(readFileSync(join(desk.repo, 'src/a.txt'), 'utf8')).toBe('one\n');
      await merge.click();
      await card.waitFor();
      expect(await card.textContent()).toContain(`git merge --no-edit 'deskrelay/`);
      await card.getByRole('button', { name: 'Allow', exact: true }).click();
      await expect.poll(() => readFileSync(join(desk.repo, 'src/a.txt'), 'utf8')).toBe('two\n');
      expect(await axe(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
