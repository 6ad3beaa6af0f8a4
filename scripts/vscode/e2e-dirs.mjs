// The folders a real-VS-Code run gets in its temp dir: the workspace VS Code opens (with a
// README), DeskRelay's config dir (0700, as the extension makes it) and where the suite writes
// its results. Shared by run-e2e.mjs (code-server) and test-electron.mjs (desktop VS Code).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function e2eDirs(tmp) {
  const workspace = join(tmp, 'workspace');
  const configDir = join(tmp, 'deskrelay-config');
  mkdirSync(workspace, { recursive: true });
  mkdirSync(configDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(workspace, 'README.md'), '# DeskRelay e2e workspace\n');
  return { workspace, configDir, resultsPath: join(tmp, 'results.json') };
}
