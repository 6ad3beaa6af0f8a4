#!/usr/bin/env node
// Measures DeskRelay's activation inside the real VS Code extension host (code-server 4.96.4,
// driven by Debian's Chromium): installs a packaged .vsix, opens a fresh window RUNS times (each
// window gets a new extension host), and reads VS Code's own figure for the extension from
// "Developer: Show Running Extensions" (code loading + activate() call, in ms).
// Prints each run, then the median and the .vsix and dist/extension.js sizes.
//
// Usage: node scripts/vscode/measure-activation.mjs --vsix FILE [--runs 5]
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureCodeServer, entryScript } from './install-code-server.mjs';
import { CHROMIUM, CHROMIUM_FLAGS, startCodeServer } from './code-server.mjs';

const { values: args } = parseArgs({ options: { vsix: { type: 'string' }, runs: { type: 'string', default: '5' } } });
if (!args.vsix) {
  console.error('usage: node scripts/vscode/measure-activation.mjs --vsix FILE [--runs N]');
  process.exit(2);
}
const vsix = resolve(args.vsix);
const runs = Math.max(1, Number(args.runs) || 5);
const log = (m) => console.log(`[activation] ${m}`);

const cleanups = [];
const tmp = mkdtempSync(join(tmpdir(), 'deskrelay-activation-'));
cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
try {
  ensureCodeServer();
  const env = {
    ...process.env,
    DESKRELAY_CONFIG_DIR: join(tmp, 'deskrelay-config'),
    XDG_CONFIG_HOME: join(tmp, 'xdg-config'),
    XDG_DATA_HOME: join(tmp, 'xdg-data'),
  };
  delete env.VSCODE_IPC_HOOK_CLI;
  const workspace = join(tmp, 'workspace');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'README.md'), '# activation\n');
  const r = spawnSync(process.execPath, [entryScript(), '--extensions-dir', join(tmp, 'ext'), '--user-data-dir', join(tmp, 'ud'), '--install-extension', vsix], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`installing ${vsix} failed:\n${r.stdout}\n${r.stderr}`);
  const cs = await startCodeServer(tmp, env, { onCleanup: (fn) => cleanups.push(fn), log });
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  cleanups.push(() => browser.close());

  const figures = [];
  for (let i = 1; i <= runs; i++) {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${cs.base}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    // DeskRelay activates on startup finished: its status bar item says it has.
    await page.locator('.statusbar-item', { hasText: 'DeskRelay' }).first().waitFor({ timeout: 60_000 });
    await page.keyboard.press('Control+Shift+P');
    await page.locator('.quick-input-widget input.input').fill('>Developer: Show Running Extensions');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Show Running Extensions' }).first().waitFor({ timeout: 10_000 });
    await page.keyboard.press('Enter');
    const row = page.locator('.runtime-extensions-editor .extension', { hasText: /deskrelay/i }).first();
    const time = row.locator('.activation-time');
    await time.filter({ hasText: /\d+ms/ }).waitFor({ timeout: 30_000 });
    const text = (await time.textContent()).trim();
    const ms = Number(/(\d+)ms/.exec(text)[1]);
    figures.push(ms);
    log(`run ${i}: ${text}`);
    await context.close();
  }
  const sorted = [...figures].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  log(`median activation ${median} ms over ${runs} runs (min ${sorted[0]}, max ${sorted.at(-1)})`);
  log(`${vsix}: ${statSync(vsix).size} bytes`);
} catch (err) {
  console.error(`[activation] ${err instanceof Error ? err.stack : err}`);
  process.exitCode = 1;
} finally {
  while (cleanups.length) await Promise.resolve(cleanups.pop()()).catch(() => {});
}
