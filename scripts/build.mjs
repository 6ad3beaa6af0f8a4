// One esbuild script for both bundles: the extension (vscode external) and the standalone CLI.
import { build } from 'esbuild';
import { chmod, copyFile, mkdir } from 'node:fs/promises';

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

// The phone web client's browser libraries, served by the relay from media/web/vendor (ignored by git).
await mkdir('media/web/vendor', { recursive: true });
await Promise.all([
  copyFile('node_modules/marked/lib/marked.esm.js', 'media/web/vendor/marked.js'),
  copyFile('node_modules/marked/LICENSE', 'media/web/vendor/marked.LICENSE'),
  copyFile('node_modules/dompurify/dist/purify.es.mjs', 'media/web/vendor/purify.js'),
  copyFile('node_modules/dompurify/LICENSE', 'media/web/vendor/purify.LICENSE'),
]);
