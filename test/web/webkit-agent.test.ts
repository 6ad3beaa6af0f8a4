/**
 * The agent on the phone in WebKit (WebKitGTK's MiniBrowser over W3C WebDriver, as
 * webkit-app.test.ts), in a 375 px window: the real CLI with `--agent <tmp git repo>` and the scripted
 * OpenAI-compatible model (test/fixtures/providers/scripted.ts), behind the test proxy. An edit
 * allowed and a write denied (checked on disk), a command with its output, hostile text kept as
 * text, the diff wrapped inside the screen, 44 px buttons, and the stream resumed after a cut.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import type { Cli } from '../agent/support';
import type { ScriptedModel } from '../fixtures/providers/scripted';
import { bearer, send } from '../helpers/http';
import { allowAgent, actAs } from '../helpers/devices';
import { ensureVendor, SCREENSHOTS, startAgentDesk, type AgentDesk } from './harness';
import type { TestProxy } from './proxy';
import { clickWhenReady, startWebKit, type Session, type WebKit } from './webdriver';

let webkit: WebKit;
let model: ScriptedModel;
let cli: Cli & { configDir: string };
let proxy: TestProxy;
let repo: string;
let agent: AgentDesk | undefined;

beforeAll(async () => {
  ensureVendor();
  mkdirSync(SCREENSHOTS, { recursive: true });
  agent = await startAgentDesk('deskrelay-agent-webkit-', {
    'src/math.js': `export function add(a, b) {\n  const note = 'a line long enough to wrap on a phone screen of three hundred and seventy-five pixels';\n  return a - b;\n}\n`,
    'src/<img src=x onerror=window.__xss=1>.js': 'x\n',
  });
  ({ model, cli, proxy, repo } = agent);
  webkit = await startWebKit();
}, 120_000);

afterAll(async () => {
  await webkit?.stop();
  await agent?.close();
});

const click = clickWhenReady;

/** The desk's devices, as the pairing token lists them. */
const deviceIds = async () => ((await send(cli.url, '/v1/devices', { headers: bearer(cli.pairingToken) })).json as { id: string }[]).map((d) => d.id);

/** Pairs the WebKit phone by the desk's link (it registers with its own key), allows its device the agent at the desk, and opens the app at `/` (issue 36). */
async function agentPhone(s: Session): Promise<void> {
  const before = new Set(await deviceIds());
  await s.go(webClientLink(proxy.url, cli.pairingToken));
  await s.waitFor('#chat');
  let added: string[] = [];
  await expect.poll(async () => (added = (await deviceIds()).filter((id) => !before.has(id))).length).toBe(1);
  await allowAgent({ url: cli.url, token: cli.pairingToken, configDir: cli.configDir }, added[0]!);
  await s.go(`${proxy.url}/`);
}

/** Clicks the button with exactly this text inside `scope`. */
const clickText = (s: Session, scope: string, text: string) =>
  s.exec(`const b = [...document.querySelectorAll(arguments[0] + ' button')].find((x) => x.textContent.trim() === arguments[1]); if (!b) throw new Error('no button ' + arguments[1]); b.click();`, scope, text);

const waitText = (s: Session, css: string, text: string, timeout = 15_000) =>
  expect.poll(async () => (await s.count(css)) ? await s.textOf(css) : '', { timeout }).toContain(text);

describe('the agent in WebKit', () => {
  it('a full session: an edit allowed, a write denied, a command with output; hostile text stays text; resumes after a cut', async () => {
    model.script([
      { text: ['Fixing **add**. <img src=x onerror="window.__xss=2">'], calls: [{ name: 'list_files', arguments: {} }, { name: 'edit_file', arguments: { path: 'src/math.js', old: 'a - b', new: 'a + b' } }] },
      { calls: [{ name: 'write_file', arguments: { path: 'src/evil.js', content: 'evil()\n' } }] },
      { calls: [{ name: 'run_command', arguments: { command: 'echo "<b>webkit</b>"' } }] },
      { text: ['Done.'] },
    ]);
    const s = await webkit.session();
    try {
      await s.setWindowRect({ width: 375, height: 812 });
      await agentPhone(s);
      await click(s, '.modes .mode:nth-child(2)');
      await click(s, '.agent-new');
      await s.type(await s.waitFor('#agent-prompt'), 'Fix add');
      await click(s, '.agent-new-form button[type="submit"]');

      await s.waitFor('.approval:not(.decided) .diff', 15_000);
      expect(await s.textOf('.approval:not(.decided) .approval-title')).toBe('Make this edit?');
      const layout = await s.exec<{ width: number; overflow: number; rowRight: number; rowHeight: number; buttons: number[] }>(`
        const row = [...document.querySelectorAll('.dl.ctx .code')].find((e) => e.textContent.includes('long enough'));
        const r = row.getBoundingClientRect();
        const box = row.closest('.diff').getBoundingClientRect();
        return {
          width: document.documentElement.clientWidth,
          overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
          rowRight: r.right - box.right, rowHeight: r.height,
          buttons: [...document.querySelectorAll('.approval:not(.decided) button')].map((b) => b.getBoundingClientRect().height),
        };`);
      // MiniBrowser keeps a minimum window width (its viewport comes out ~447 px for 375 asked):
      // what counts is that nothing goes past the screen and the long line wraps in its box.
      expect(layout.overflow).toBe(0);
      // The long line wraps inside the diff's box: never past its right edge.
      expect(layout.rowRight).toBeLessThanOrEqual(0);
      expect(layout.rowHeight).toBeGreaterThan(30);
      expect(layout.buttons).toHaveLength(3);
      for (const h of layout.buttons) expect(h).toBeGreaterThanOrEqual(44);
      await s.exec(`document.querySelector('.approval:not(.decided)').scrollIntoView({ block: 'center' })`);
      writeFileSync(join(SCREENSHOTS, 'webkit-agent-edit-approval.png'), await s.screenshot());
      await clickText(s, '.approval:not(.decided)', 'Allow');
      await expect.poll(() => readFileSync(join(repo, 'src/math.js'), 'utf8'), { timeout: 10_000 }).toContain('return a + b;');

      await waitText(s, '.approval:not(.decided) .approval-title', 'Write this file?');
      // The connection is cut while the agent waits: the stream resumes from its last event.
      proxy.cut();
      await clickText(s, '.approval:not(.decided)', 'Deny');
      await waitText(s, '.approval:not(.decided) .approval-title', 'Run this command?');
      expect(existsSync(join(repo, 'src/evil.js'))).toBe(false);
      expect(await s.textOf('.approval:not(.decided) pre.command')).toBe('echo "<b>webkit</b>"');
      await clickText(s, '.approval:not(.decided)', 'Allow');
      await waitText(s, '.agent-meta', 'Done: send more');
      const state = await s.exec<{ outcomes: string[]; output: string; users: number; replies: string[]; files: string; xss: unknown; injected: number }>(`
        const card = [...document.querySelectorAll('.tool-card')].find((c) => c.textContent.includes('run_command'));
        const list = [...document.querySelectorAll('.tool-card')].find((c) => c.textContent.includes('list_files'));
        return {
          outcomes: [...document.querySelectorAll('.approval-outcome')].map((e) => e.textContent),
          output: [...card.querySelectorAll('.tool-io pre')].at(-1).textContent,
          files: [...list.querySelectorAll('.tool-io pre')].at(-1).textContent,
          users: document.querySelectorAll('.agent-log .msg.user').length,
          replies: [...document.querySelectorAll('.agent-log .reply')].map((e) => e.textContent.trim()),
          xss: window.__xss,
          injected: document.querySelectorAll('.agent-screen img, .agent-screen b').length,
        };`);
      expect(state.outcomes).toEqual(['Allowed', 'Denied', 'Allowed']);
      expect(state.output).toContain('<b>webkit</b>');
      expect(state.files).toContain('<img src=x onerror=window.__xss=1>.js');
      // Nothing shown twice after the resume.
      expect(state.users).toBe(1);
      expect(state.replies).toEqual(['Fixing add.', 'Done.']);
      expect(state.xss).toBeNull();
      expect(state.injected).toBe(0);
      expect(model.failures).toEqual([]);
    } finally {
      await s.close();
      const list = await send(cli.url, '/v1/agent/sessions', { headers: bearer(cli.token) });
      for (const x of list.json?.sessions ?? []) await actAs(cli, x.id, 'delete');
    }
  }, 90_000);
});
