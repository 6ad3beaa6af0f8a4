/**
 * Issue 40 on the phone (Chromium, 375 px, the real CLI): the agent screen says when a tool
 * server (MCP) is not working, and a session that outgrew its model's 4k context shows
 * "Earlier steps were summarised" in its view (and the dropped results' note) while it goes on.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentPhone, axe, phone, useAgentDeskSuite } from './harness';

const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} line ${i} ${'x'.repeat(40)}`).join('\n') + '\n';

const suite = useAgentDeskSuite('deskrelay-agent-context-web-', { 'a.txt': lines(100, 'alpha'), 'b.txt': lines(100, 'beta'), 'c.txt': lines(100, 'gamma') }, (baseUrl) => ({
    providers: [{ id: 'scripted', kind: 'openai-compatible', baseUrl, model: 'gpt-4o', contextLength: 4096 }],
    mcpServers: { broken: { command: process.execPath, args: [join(__dirname, '..', 'fixtures', 'mcp', 'crash-server.mjs')] } },
  }));
const desk = suite.desk;

describe('issue 40 on the phone: tool servers and context', () => {
  it('a tool server that did not start is named on the agent screen; "Earlier steps were summarised" shows in the session and it goes on', async () => {
    desk.model.script([
      { calls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
      { calls: [{ name: 'read_file', arguments: { path: 'b.txt' } }] },
      { calls: [{ name: 'read_file', arguments: { path: 'c.txt' } }, { name: 'read_file', arguments: { path: 'b.txt' } }] },
      { text: ['Task: look at three files. Left: answer.'] },
      { text: ['All three files are lists of lines.'] },
    ]);
    const { page, context } = await phone(suite.browser);
    try {
      await agentPhone(page, desk);
      await page.getByRole('tab', { name: 'Agent' }).click();
      await expect.poll(() => page.getByText(/Tool server “broken” is not working: Could not start: .*boom, no database/).isVisible()).toBe(true);
      await page.getByRole('button', { name: 'New session' }).click();
      await page.getByLabel('What should it do?').fill('Look at a.txt, b.txt and c.txt and tell me what they hold.');
      await page.getByRole('button', { name: 'Start' }).click();
      await expect.poll(() => page.locator('.agent-context').allTextContents()).toContain('Earlier steps were summarised to fit the model\u2019s context.');
      expect((await page.locator('.agent-context').first().textContent()) ?? '').toMatch(/replaced by a note/);
      await expect.poll(() => page.getByText('All three files are lists of lines.').isVisible()).toBe(true);
      expect(desk.model.failures).toEqual([]);
      expect(await axe(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
