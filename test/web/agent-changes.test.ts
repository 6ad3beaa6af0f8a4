/**
 * A session's changes on the phone (issue 38 item 9), in Chromium at 375×812 with touch against
 * the real CLI (`deskrelay serve --agent` on a git folder) and the scripted model, which rewrites
 * two files and makes one: the Changes view lists the three with one diff each (together the
 * session's combined diff); Undo, signed by the page's key, puts a file's bytes back (a made file
 * is removed) and the list updates; a file changed outside the session since is refused with the
 * desk's message and keeps what was written. axe-core clean in light and dark.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { bearer, send } from '../helpers/http';
import { agentPhone, axe, SCREENSHOTS, useAgentDeskSuite } from './harness';

const ORIGINAL = { 'README.md': '# project\n\nFirst words.\n', 'src/math.js': 'export const add = (a, b) => a - b;\n' };

const suite = useAgentDeskSuite('deskrelay-agent-changes-', ORIGINAL);
const desk = suite.desk;

const read = (path: string) => readFileSync(join(desk.repo, path), 'utf8');

/** A phone (light or dark) whose session, started and approved on the page, rewrote two files and made one. */
async function sessionThatChanged(scheme: 'light' | 'dark'): Promise<Page> {
  for (const [path, text] of Object.entries(ORIGINAL)) writeFileSync(join(desk.repo, path), text);
  rmSync(join(desk.repo, 'src/new.js'), { force: true });
  const p = await suite.openPhone(scheme);
  const { page } = p;
  await agentPhone(page, desk);
  desk.model.script([
    {
      calls: [
        { name: 'write_file', arguments: { path: 'README.md', content: '# project\n\nNew words.\n' } },
        { name: 'write_file', arguments: { path: 'src/math.js', content: 'export const add = (a, b) => a + b;\n' } },
        { name: 'write_file', arguments: { path: 'src/new.js', content: 'export const two = 2;\n' } },
      ],
    },
    { text: ['Fixed add and added two.'] },
  ]);
  await page.getByRole('tab', { name: 'Agent' }).click();
  await page.getByRole('button', { name: 'New session' }).click();
  await page.getByLabel('What should it do?').fill('Fix add and add two');
  await page.getByRole('button', { name: 'Start' }).click();
  for (let i = 0; i < 3; i++) {
    const card = page.locator('.approval:not(.decided)');
    await card.waitFor();
    await card.getByRole('button', { name: 'Allow', exact: true }).click();
    await expect.poll(() => page.locator('.approval.decided').count()).toBe(i + 1);
  }
  await expect.poll(() => page.locator('.agent-outcome').textContent(), { timeout: 15_000 }).toContain('The agent finished this turn');
  return page;
}

async function openChanges(page: Page) {
  await page.getByRole('button', { name: 'Changes', exact: true }).click();
  const view = page.getByRole('dialog', { name: 'Changes' });
  await view.waitFor();
  await expect.poll(() => view.locator('.agent-changes-summary').textContent()).not.toContain('Loading');
  return view;
}

const paths = (view: ReturnType<Page['getByRole']>) => view.locator('.agent-change-path').allTextContents();

describe('the Changes view', () => {
  it('lists the files with a combined diff; Undo (signed) restores a file\'s bytes and removes a made one, the list updates; a file changed outside is refused with the message', async () => {
    const page = await sessionThatChanged('light');
    const view = await openChanges(page);
    expect(await paths(view)).toEqual(['README.md', 'src/math.js', 'src/new.js']);
    expect(await view.locator('.agent-change-kind').allTextContents()).toEqual(['changed', 'changed', 'new file']);
    expect(await view.locator('.diff').count()).toBe(3);
    const shown = await view.locator('.diff .dl').allTextContents();
    expect(shown.some((l) => l.includes('First words.'))).toBe(true);
    expect(shown.some((l) => l.includes('a + b'))).toBe(true);
    expect(shown.some((l) => l.includes('export const two = 2;'))).toBe(true);
    expect(await axe(page)).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, 'agent-changes.png'), fullPage: true });

    const undo = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/changes/undo'));
    await view.getByRole('button', { name: 'Undo src/math.js' }).click();
    const body = (await undo).postDataJSON() as { path: string; digest: string; signature: string };
    expect(body.path).toBe('src/math.js');
    expect(body.signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    await expect.poll(() => paths(view)).toEqual(['README.md', 'src/new.js']);
    expect(read('src/math.js')).toBe(ORIGINAL['src/math.js']);

    await view.getByRole('button', { name: 'Undo src/new.js' }).click();
    await expect.poll(() => paths(view)).toEqual(['README.md']);
    expect(existsSync(join(desk.repo, 'src/new.js'))).toBe(false);

    // Changed at the desk after the session's edit: Undo would lose that, so it is refused.
    writeFileSync(join(desk.repo, 'README.md'), '# project\n\nNew words.\nAdded at the desk.\n');
    await view.getByRole('button', { name: 'Undo README.md' }).click();
    const note = view.locator('.agent-change').filter({ hasText: 'README.md' }).locator('.agent-change-note');
    await expect.poll(() => note.textContent()).toContain("README.md changed since the session's last change to it (outside the session)");
    expect(read('README.md')).toBe('# project\n\nNew words.\nAdded at the desk.\n');
    expect(await paths(view)).toEqual(['README.md']);
    await page.screenshot({ path: join(SCREENSHOTS, 'agent-changes-refused.png'), fullPage: true });
    expect(await axe(page)).toEqual([]);
  });

  it('is axe-core clean in dark, with the diff and a file changed outside shown', async () => {
    const page = await sessionThatChanged('dark');
    writeFileSync(join(desk.repo, 'src/math.js'), 'export const add = (a, b) => b + a;\n');
    const view = await openChanges(page);
    expect(await paths(view)).toEqual(['README.md', 'src/math.js', 'src/new.js']);
    expect(await view.locator('.agent-change').filter({ hasText: 'src/math.js' }).locator('.agent-change-note').textContent()).toContain('Changed outside this session');
    // No Undo offered there (the desk would refuse it); the others keep theirs.
    expect(await view.getByRole('button', { name: 'Undo src/math.js' }).count()).toBe(0);
    expect(await view.getByRole('button', { name: 'Undo README.md' }).isVisible()).toBe(true);
    expect(await axe(page)).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, 'agent-changes-dark.png'), fullPage: true });
  });

  it('a worktree session lists its worktree\'s files (the project untouched); Discard is signed by the page and removes the worktree', async () => {
    for (const [path, text] of Object.entries(ORIGINAL)) writeFileSync(join(desk.repo, path), text);
    const p = await suite.openPhone();
    const { page } = p;
    await agentPhone(page, desk);
    desk.model.script([{ calls: [{ name: 'write_file', arguments: { path: 'src/math.js', content: 'export const add = (a, b) => a + b;\n' } }] }, { text: ['Fixed.'] }]);
    await page.getByRole('tab', { name: 'Agent' }).click();
    await page.getByRole('button', { name: 'New session' }).click();
    await page.getByLabel('What should it do?').fill('Fix add in a worktree');
    await page.getByLabel(/Work in a worktree of its own/).check();
    await page.getByRole('button', { name: 'Start' }).click();
    const card = page.locator('.approval:not(.decided)');
    await card.waitFor();
    await card.getByRole('button', { name: 'Allow', exact: true }).click();
    await expect.poll(() => page.locator('.agent-outcome').textContent(), { timeout: 15_000 }).toContain('The agent finished this turn');
    const id = decodeURIComponent(/[?&]agent=([^&]+)/.exec(page.url())![1]!);
    const worktree = (await send(desk.cli.url, `/v1/agent/sessions/${id}`, { headers: bearer(desk.cli.token) })).json.worktree as { path: string };
    expect(readFileSync(join(worktree.path, 'src/math.js'), 'utf8')).toBe('export const add = (a, b) => a + b;\n');

    const view = await openChanges(page);
    expect(await paths(view)).toEqual(['src/math.js']);
    expect(read('src/math.js')).toBe(ORIGINAL['src/math.js']);
    await view.getByRole('button', { name: 'Close' }).click();

    page.once('dialog', (d) => void d.accept());
    const discard = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/discard'));
    await page.getByRole('button', { name: 'Discard' }).click();
    expect(((await discard).postDataJSON() as { signature: string }).signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    await page.getByRole('heading', { name: 'Agent sessions' }).waitFor();
    await expect.poll(() => existsSync(worktree.path)).toBe(false);
  });
});
