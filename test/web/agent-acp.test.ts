/**
 * An ACP agent on the phone (issue 39), in Chromium at 375 px: the real CLI with the stand-in ACP
 * agent (test/fixtures/acp/agent.mjs) in config.json "agents". New session offers the agents
 * (those the desk lacks listed with their reason); the session shows the agent's thinking folded,
 * its plan as a checklist, its modes as a picker that changes the agent's mode, and its `/`
 * commands as composer suggestions.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitProject, startCli, type Cli } from '../agent/support';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { agentPhone, axe, ensureVendor, launchBrowser, phone, SCREENSHOTS } from './harness';

const STAND_IN = join(__dirname, '..', 'fixtures', 'acp', 'agent.mjs');

let browser: Browser;
let model: ScriptedModel;
let cli: Cli & { configDir: string };
let base: string;

beforeAll(async () => {
  ensureVendor();
  let repo: string;
  ({ base, repo } = gitProject('deskrelay-acp-web-', { 'README.md': '# project\n' }));
  model = await startScriptedModel();
  cli = await startCli(['--agent', repo], `${model.url}/v1`, {}, {
    agents: { standin: { name: 'Stand-in', command: process.execPath, args: [STAND_IN] }, missing: { name: 'Missing', command: 'no-such-acp-agent-for-tests' } },
  });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  cli?.child.kill('SIGKILL');
  await model?.close();
  if (base) rmSync(base, { recursive: true, force: true });
  if (cli) rmSync(cli.configDir, { recursive: true, force: true });
});

describe('an ACP agent on the phone', () => {
  it('New session offers it; thinking folded, the plan a checklist, the mode picker, / suggestions', async () => {
    const { page, context } = await phone(browser);
    try {
      await page.emulateMedia({ reducedMotion: 'reduce' });
      // Paired as a phone is (its own key, allowed at the desk): the mode it picks is signed.
      await agentPhone(page, { cli, proxy: { url: cli.url } });
      await page.getByRole('tab', { name: 'Agent' }).click();
      await page.getByRole('button', { name: 'New session' }).click();
      const agentSelect = page.getByRole('dialog', { name: 'New agent session' }).getByLabel('Agent', { exact: true });
      await expect.poll(() => agentSelect.locator('option').allTextContents()).toContain('Stand-in');
      expect(await agentSelect.locator('option').allTextContents()).not.toContain('Missing');
      await page.getByText('Agents not on this desk').click();
      expect(await page.locator('.agent-unavailable li', { hasText: 'Missing' }).textContent()).toContain('no-such-acp-agent-for-tests is not on the desktop\'s PATH');
      await agentSelect.selectOption('standin');
      await page.getByLabel('What should it do?').fill('hello');
      await page.getByRole('button', { name: 'Start' }).click();

      await page.getByText('Hello from the stand-in (mode default).').waitFor();
      // Thinking: folded until tapped.
      const thinking = page.locator('.agent-thinking details');
      expect(await thinking.getAttribute('open')).toBeNull();
      expect(await thinking.locator('summary').textContent()).toBe('Thinking');
      expect(await thinking.locator('.thought').isVisible()).toBe(false);
      await thinking.locator('summary').click();
      expect(await thinking.locator('.thought').textContent()).toBe('Thinking about hello.');
      // The plan, with each step's state said.
      const plan = page.getByRole('list', { name: 'Plan' });
      expect(await plan.locator('li').allTextContents()).toEqual(['\u2611Done:Say hello', '\u2610To do:Wave']);

      // The mode picker: shown with the agent's modes; a choice changes the agent's mode.
      const modePicker = page.getByLabel('Agent mode', { exact: true });
      await modePicker.waitFor();
      expect(await modePicker.inputValue()).toBe('default');
      await modePicker.selectOption('plan');
      const id = new URL(page.url()).searchParams.get('agent')!;
      await expect.poll(async () => (await send(cli.url, `/v1/agent/sessions/${id}`, { headers: bearer(cli.token) })).json.modes.current).toBe('plan');

      // `/` suggests the agent's commands; Enter puts the first in.
      const box = page.getByLabel('Message to the agent');
      await box.fill('/');
      await box.press('End');
      await box.type('c');
      const suggestion = page.locator('.mentions .mention');
      // The list narrows as the typing lands: wait for the narrowed one, not the first drawn.
      await expect.poll(() => suggestion.allTextContents()).toEqual(['/compact Compact the conversation']);
      await box.press('Enter');
      expect(await box.inputValue()).toBe('/compact ');

      await page.screenshot({ path: join(SCREENSHOTS, 'agent-acp.png'), fullPage: true });
      const violations = await axe(page);
      expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
