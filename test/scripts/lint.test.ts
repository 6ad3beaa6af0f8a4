// The lint config's layout rule: anything under server/ that imports vscode fails `npm run lint`,
// wherever in server/ the file sits; extension/ may import it.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const eslint = new ESLint({ cwd: root });
const rulesHit = async (code: string, file: string) =>
  (await eslint.lintText(code, { filePath: resolve(root, file) }))[0]!.messages.map((m) => m.ruleId);

describe('eslint.config.mjs', () => {
  it('fails a file anywhere under server/ that imports vscode', async () => {
    for (const file of ['server/src/app.ts', 'server/src/some/new/folder/thing.ts']) {
      expect(await rulesHit("import * as vscode from 'vscode';\nexport const v = vscode;\n", file)).toContain('no-restricted-imports');
      expect(await rulesHit("import type { Uri } from 'vscode';\nexport type U = Uri;\n", file)).toContain('no-restricted-imports');
    }
  }, 60_000);

  it('lets extension/ import vscode', async () => {
    expect(await rulesHit("import * as vscode from 'vscode';\nexport const v = vscode;\n", 'extension/src/thing.ts')).toEqual([]);
  }, 60_000);

  it('is part of npm test, after the type-check', () => {
    const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8'));
    expect(pkg.scripts.lint).toMatch(/^eslint\b/);
    expect(pkg.scripts.test.indexOf('npm run lint')).toBeGreaterThan(pkg.scripts.test.indexOf('npm run typecheck'));
  });
});
