// Compiles the e2e tests with esbuild into the ignored .cache/vscode-suite/:
// the Mocha suite as CommonJS for the extension host (vscode and npm packages stay external,
// resolved from the checkout's node_modules), the UI tests as ESM for the launcher.
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const buildDir = join(repoRoot, '.cache', 'vscode-suite');
export const suiteIndex = join(buildDir, 'suite', 'index.js');

export async function compileTests({ ui = true } = {}) {
  const { build } = await import('esbuild');
  rmSync(buildDir, { recursive: true, force: true });
  const suiteSrc = join(repoRoot, 'test', 'e2e', 'vscode', 'suite');
  const entries = readdirSync(suiteSrc)
    .filter((f) => f === 'index.ts' || f.endsWith('.test.ts'))
    .map((f) => join(suiteSrc, f));
  const common = { bundle: true, platform: 'node', target: 'node20', sourcemap: 'inline', logLevel: 'warning', packages: 'external' };
  await build({ ...common, entryPoints: entries, outdir: join(buildDir, 'suite'), format: 'cjs', external: ['vscode'] });
  if (ui) {
    await build({ ...common, entryPoints: [join(repoRoot, 'test', 'e2e', 'vscode', 'ui.ts')], outfile: join(buildDir, 'ui.mjs'), format: 'esm' });
  }
}
