#!/usr/bin/env node
// The same Mocha suite as `npm run test:vscode`, on a desktop VS Code under @vscode/test-electron.
// It downloads VS Code (the minimum supported, engines ^1.96.0) into .vscode-test/, so it needs
// a network and a display: for developers' desktops, not for CI here.
// Usage: node scripts/vscode/test-electron.mjs [--version 1.96.0|stable] [--grep TEXT]
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runTests } from '@vscode/test-electron';
import { compileTests, suiteIndex } from './compile-tests.mjs';
import { e2eDirs } from './e2e-dirs.mjs';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({ options: { version: { type: 'string', default: '1.96.0' }, grep: { type: 'string' } } });

await compileTests({ ui: false });
const tmp = mkdtempSync(join(tmpdir(), 'deskrelay-desktop-'));
const { workspace, configDir, resultsPath } = e2eDirs(tmp);
mkdirSync(join(tmp, 'ud', 'User'), { recursive: true });
// As in run-e2e.mjs: keep VS Code's proxy support from replacing the tunnel tests' https Agent.
writeFileSync(join(tmp, 'ud', 'User', 'settings.json'), JSON.stringify({ 'http.proxySupport': 'off', 'security.workspace.trust.enabled': false }));
let code = 1;
try {
  code = await runTests({
    version: args.version,
    extensionDevelopmentPath: repoRoot,
    extensionTestsPath: suiteIndex,
    launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust', '--user-data-dir', join(tmp, 'ud'), '--skip-welcome', '--skip-release-notes'],
    extensionTestsEnv: {
      DESKRELAY_CONFIG_DIR: configDir,
      DESKRELAY_E2E_RESULTS: resultsPath,
        ...(args.grep ? { DESKRELAY_E2E_GREP: args.grep } : {}),
    },
  });
} catch (err) {
  console.error(`test-electron: ${err instanceof Error ? err.message : err}`);
}
let passed = 0;
let failed = code === 0 ? 0 : 1;
try {
  const r = JSON.parse(readFileSync(resultsPath, 'utf8'));
  passed = r.passed;
  failed = r.failed + (r.done ? 0 : 1);
} catch {
  /* the suite never ran; counted as one failure above */
}
rmSync(tmp, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
