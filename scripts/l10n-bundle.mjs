#!/usr/bin/env node
// Writes l10n/bundle.l10n.json: every string the extension passes to vscode.l10n.t (directly or
// through its `const t = vscode.l10n.t`), keyed by itself, as VS Code's l10n loader expects
// ("l10n": "./l10n" in package.json). Translators copy it to bundle.l10n.<locale>.json.
//   node scripts/l10n-bundle.mjs          write it
//   node scripts/l10n-bundle.mjs --check  exit 1 when it is stale
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLE = join(root, 'l10n/bundle.l10n.json');

/** The bundle's text for the extension's sources as they are now. */
export function bundleText() {
  const dir = join(root, 'extension/src');
  const strings = new Set();
  for (const file of readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(join(dir, file), 'utf8');
    const aliased = /const t = vscode\.l10n\.t\b/.test(text);
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression.getText(source);
        const arg = node.arguments[0];
        if ((callee === 'vscode.l10n.t' || (aliased && callee === 't')) && arg && (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg))) strings.add(arg.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  const bundle = Object.fromEntries([...strings].sort().map((s) => [s, s]));
  return `${JSON.stringify(bundle, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = bundleText();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(BUNDLE, 'utf8');
    } catch {}
    if (current !== text) {
      console.error('l10n/bundle.l10n.json is stale: run node scripts/l10n-bundle.mjs');
      process.exit(1);
    }
  } else writeFileSync(BUNDLE, text);
}
