// One esbuild script for both bundles: the extension (vscode external) and the standalone CLI.
import { build } from 'esbuild';
import { chmod } from 'node:fs/promises';

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  logLevel: 'warning',
  legalComments: 'none',
};

await Promise.all([
  build({ ...common, entryPoints: ['extension/src/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'] }),
  build({
    ...common,
    entryPoints: ['server/src/cli/main.ts'],
    outfile: 'dist/cli.js',
    banner: { js: '#!/usr/bin/env node' },
  }),
]);
await chmod('dist/cli.js', 0o755);
