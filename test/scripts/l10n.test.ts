// User-facing strings in the extension go through vscode.l10n.t (the manifest's through
// package.nls.json, checked in package.test.ts): no message, title, prompt or button label is
// a bare string literal.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const dir = resolve(__dirname, '../../extension/src');
const sources = readdirSync(dir, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => ({ file: f, text: readFileSync(join(dir, f), 'utf8') }));

describe('extension strings are localized', () => {
  it('messages and their buttons are never bare literals', () => {
    const bare: string[] = [];
    for (const { file, text } of sources) {
      // show…Message( 'text' | `text` | …, 'Button')
      for (const m of text.matchAll(/show(?:Information|Warning|Error)Message\(\s*([^\n]*)/g)) {
        if (/^['"`]/.test(m[1]!) || /,\s*['"`][A-Z]/.test(m[1]!)) bare.push(`${file}: ${m[0]}`);
      }
      for (const m of text.matchAll(/\b(title|prompt|placeHolder|message): ['"`][A-Z][^\n]*/g)) bare.push(`${file}: ${m[0]}`);
    }
    expect(bare).toEqual([]);
  });

  it('uses vscode.l10n.t in every file that talks to the user', () => {
    for (const { file, text } of sources) {
      if (/show(?:Information|Warning|Error)Message|showQuickPick|showInputBox|createWebviewPanel|MarkdownString/.test(text)) {
        expect(text, file).toMatch(/vscode\.l10n\.t\b/);
      }
    }
  });

  it('ships the l10n bundle VS Code loads, holding every string the extension passes to vscode.l10n.t', async () => {
    const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8'));
    expect(pkg.l10n).toBe('./l10n');
    // @ts-expect-error: a plain .mjs script, no types
    const { bundleText, BUNDLE } = await import('../../scripts/l10n-bundle.mjs');
    const bundle = JSON.parse(readFileSync(BUNDLE, 'utf8')) as Record<string, string>;
    expect(readFileSync(BUNDLE, 'utf8'), 'stale: run node scripts/l10n-bundle.mjs').toBe(bundleText());
    for (const s of ['DeskRelay tunnel is up at {0}. Pair the phone with the tunnel URL.', 'Which tunnel?']) expect(bundle[s]).toBe(s);
  });
});
