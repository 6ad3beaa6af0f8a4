/**
 * The agent on a phone kept open all day (issue 38), in Chromium at 375×812 with touch: an
 * approval waiting raises a count on the Agent tab and in the header, the page's title and a
 * banner on the Chat screen that opens the card; in a long session Stop stays on screen and
 * "1 waiting ↓" brings an off-screen card into view; axe-core finds nothing in light or dark.
 * The real CLI (`serve --agent` on a git folder) with the scripted OpenAI-compatible model.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { actAs } from '../helpers/devices';
import { bearer, send } from '../helpers/http';
import { agentPhone, axe, launchBrowser, phone, SCREENSHOTS, startAgentDesk, type AgentDesk } from './harness';

let browser: Browser;
let agent: AgentDesk;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  agent = await startAgentDesk('deskrelay-daily-agent-', { 'src/math.js': 'export function add(a, b) {\n  return a - b;\n}\n' });
  browser = await launchBrowser();
});

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
  const list = await send(agent.cli.url, '/v1/agent/sessions', { headers: bearer(agent.cli.token) });
  for (const s of list.json?.sessions ?? []) await actAs(agent.cli, s.id, 'delete');
  agent.model.script([]);
});

afterAll(async () => {
  await browser?.close();
  await agent?.close();
});

async function openAgent(colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
  const p = await phone(browser, colorScheme);
  cleanups.push(async () => {
    await p.context.close();
    expect(p.console.filter((l) => l.startsWith('pageerror'))).toEqual([]);
  });
  await p.page.emulateMedia({ reducedMotion: 'reduce', colorScheme });
  // Paired as a phone is (its own device and key), and allowed the agent at the desk.
  await agentPhone(p.page, agent);
  await p.page.getByRole('tab', { name: 'Agent' }).click();
  await p.page.getByRole('heading', { name: 'Agent sessions' }).waitFor();
  return p.page;
}

async function startSession(page: Page, prompt: string): Promise<void> {
  await page.getByRole('button', { name: 'New session' }).click();
  await page.getByLabel('What should it do?').fill(prompt);
  await page.getByRole('button', { name: 'Start' }).click();
}

const card = (page: Page) => page.locator('.approval:not(.decided)');
const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `daily-agent-${name}.png`) });
const LONG_TEXT = Array.from({ length: 40 }, (_, i) => `Step ${i}: reading the code around add and what calls it.\n\n`);
let written = 0;
/** A write the agent must ask for (a new file each time: an allowed one is on disk after). */
const write = () => ({ name: 'write_file', arguments: { path: `notes/n${++written}.md`, content: 'note\n' } });

describe('the agent gets your attention', () => {
  it('a pending approval raises the count on the Agent tab and in the header, the title, and a banner on the Chat screen that opens the card', async () => {
    agent.model.script([{ text: ['Let me fix it.'], calls: [write()] }, { text: ['Done.'] }]);
    const page = await openAgent();
    await startSession(page, 'Fix add');
    await card(page).waitFor();
    await page.getByRole('tab', { name: /^Chat/ }).click();
    await expect.poll(() => page.title(), { timeout: 10_000 }).toBe('(1) DeskRelay');
    const tab = page.getByRole('tab', { name: /^Agent/ });
    expect(await tab.locator('.badge').textContent()).toBe('1');
    expect(await tab.locator('.badge').isVisible()).toBe(true);
    const headerBadge = page.locator('header.bar').getByRole('button', { name: '1 approval waiting: open' });
    expect(await headerBadge.isVisible()).toBe(true);
    const banner = page.locator('#chat').getByRole('status').filter({ hasText: 'waiting for your decision' });
    expect(await banner.isVisible()).toBe(true);
    await shot(page, 'chat-banner');
    expect(await axe(page)).toEqual([]);
    await banner.getByRole('button', { name: 'Review' }).click();
    await expect.poll(() => card(page).locator('button:focus').count()).toBe(1);
    const box = (await card(page).boundingBox())!;
    expect(box.y).toBeLessThan(812);
    expect(box.y + box.height).toBeGreaterThan(0);
    await card(page).getByRole('button', { name: 'Allow', exact: true }).click();
    await expect.poll(() => page.title(), { timeout: 10_000 }).toBe('DeskRelay');
    expect(await headerBadge.count()).toBe(0);
    // The session ends before the next test's script is set (its last request would take it).
    await expect.poll(() => page.locator('.agent-meta').textContent(), { timeout: 15_000 }).toContain('Done');
  });
});

describe('Stop and the waiting card are always in reach', () => {
  it('keeps Stop on screen in a long transcript, and "1 waiting ↓" brings the off-screen card into view', async () => {
    agent.model.script([{ text: LONG_TEXT, calls: [write()] }, { text: ['Done.'] }]);
    const page = await openAgent();
    await startSession(page, 'Fix add, carefully');
    await card(page).waitFor();
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.mouse.wheel(0, 600);
    await expect.poll(() => page.evaluate(() => window.scrollY)).toBeGreaterThan(300);
    const stop = page.getByRole('button', { name: 'Stop', exact: true });
    const header = (await page.locator('header.bar').boundingBox())!;
    const s = (await stop.boundingBox())!;
    expect(s.y).toBeGreaterThanOrEqual(header.y + header.height - 1);
    expect(s.y + s.height).toBeLessThanOrEqual(812);
    const jump = page.getByRole('button', { name: '1 approval waiting: show' });
    expect(await jump.textContent()).toBe('1 waiting ↓');
    await shot(page, 'waiting-jump');
    await jump.click();
    await expect.poll(async () => {
      const b = (await card(page).boundingBox())!;
      return b.y >= 0 && b.y < 812;
    }).toBe(true);
    await expect.poll(() => jump.isHidden()).toBe(true);
    await card(page).getByRole('button', { name: 'Deny', exact: true }).click();
    await expect.poll(() => page.locator('.agent-meta').textContent(), { timeout: 15_000 }).toContain('Done');
  });

  it('axe-core finds nothing on the agent screens in light and dark', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      agent.model.script([{ text: ['Let me fix it.'], calls: [write()] }, { text: ['Done.'] }]);
      const page = await openAgent(scheme);
      expect(await axe(page), `${scheme} list`).toEqual([]);
      await startSession(page, `Fix add (${scheme})`);
      await card(page).waitFor();
      expect(await axe(page), `${scheme} session`).toEqual([]);
      await shot(page, `session-${scheme}`);
      await card(page).getByRole('button', { name: 'Deny', exact: true }).click();
      await expect.poll(() => page.locator('.agent-meta').textContent(), { timeout: 15_000 }).toContain('Done');
    }
  });
});
