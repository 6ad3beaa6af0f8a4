// UI tests: Playwright drives the real workbench (command palette, clipboard, webview).
import type { BrowserContext, Page } from 'playwright-core';

export interface UiContext {
  page: Page;
  context: BrowserContext;
  /** Opens the workbench on the test workspace with the extension loaded from the checkout. */
  open(): Promise<void>;
  workspace: string;
  configDir: string;
  artifactsDir: string;
  repoRoot: string;
  log(message: string): void;
}

export interface UiTest {
  title: string;
  run(ctx: UiContext): Promise<void>;
}

/**
 * Runs a command through the command palette: Ctrl+Shift+P, type the title, Enter.
 * The palette lists only commands known when it opened, so it is reopened until the
 * extension's contributions have arrived.
 */
export async function runCommand(page: Page, title: string, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  const input = page.locator('.quick-input-widget input.input');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  for (;;) {
    await page.keyboard.press('Control+Shift+P');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${title}`);
    try {
      await row.waitFor({ timeout: 3_000 });
      await page.keyboard.press('Enter');
      return;
    } catch (err) {
      await page.keyboard.press('Escape');
      if (Date.now() > until) throw err;
    }
  }
}

export const tests: UiTest[] = [
  {
    title: 'Show Log from the command palette opens the DeskRelay output',
    async run({ page, open }) {
      await open();
      await runCommand(page, 'DeskRelay: Show Log');
      // The output view's channel picker shows DeskRelay.
      await page.waitForFunction(`Array.from(document.querySelectorAll('.panel select')).some((s) => s.value === 'DeskRelay')`, undefined, { timeout: 20_000 });
    },
  },
];
