// The lint config's layout rule: anything under server/ that imports vscode fails `npm run lint`,
// wherever in server/ the file sits; extension/ may import it, and reaches server/src only through its index.ts.
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

  it('fails a file under extension/ that reaches into server/src past its index.ts', async () => {
    const deep = "import { TUNNEL_KINDS } from '../../server/src/tunnel';\nexport const k = TUNNEL_KINDS;\n";
    expect(await rulesHit(deep, 'extension/src/thing.ts')).toContain('no-restricted-imports');
    expect(await rulesHit(deep.replace('../../server/src/tunnel', '../../../server/src/session/paths'), 'extension/src/sub/thing.ts')).toContain('no-restricted-imports');
    expect(await rulesHit("import { TUNNEL_KINDS } from '../../server/src';\nexport const k = TUNNEL_KINDS;\n", 'extension/src/thing.ts')).toEqual([]);
  }, 60_000);
});
