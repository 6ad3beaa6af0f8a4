// One esbuild script for both bundles: the extension (vscode external) and the standalone CLI.
// `--production` (what `vsce package` runs through vscode:prepublish): minified, no source maps.
// Otherwise: readable, with source maps beside the bundles for debugging and the tests' traces.
// `--outdir DIR` builds the bundles somewhere else than dist/.
// undici (the provider transport, over half of the code) is its own file, dist/undici.js, which
// the relay loads on its first provider request: activating the extension or starting the CLI
// never loads or parses it.
import { build } from 'esbuild';
import { chmod, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildWeb } from './build-web.mjs';

const { values: args } = parseArgs({ options: { production: { type: 'boolean', default: false }, outdir: { type: 'string', default: 'dist' } } });
const production = args.production;
const out = (name) => join(args.outdir, name);

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  legalComments: 'none',
};

// A production build leaves no stale maps from an earlier development build behind.
if (production) await Promise.all(['extension.js.map', 'cli.js.map', 'undici.js.map', 'web-push.js.map', 'acp.js.map', 'qrcode.js.map'].map((f) => rm(out(f), { force: true })));
/**
 * `import('undici')` in the bundles becomes a lazy `require('./undici.js')`, the bundle beside
 * them (a require, not a native import(), so it behaves the same in every extension host).
 * web-push (Web Push, issue 15: asn1.js, bn.js, jws…) is loaded the same way, on the first push.
 * The ACP client (issue 39: @agentclientprotocol/sdk with zod, ~200 KB) is a file of its own too,
 * dist/acp.js, so the bundles do not carry it twice. The QR library (~57 KB) is dist/qrcode.js,
 * loaded when the extension first draws a pairing QR code, not at activation.
 */
function beside(name, file) {
  const namespace = `${name}-beside`;
  const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
  return {
    name: namespace,
    setup(b) {
      b.onResolve({ filter: new RegExp(`^${escape(name)}$`) }, () => ({ path: name, namespace }));
      b.onLoad({ filter: /.*/, namespace }, () => ({ contents: `module.exports = require('./${file}');`, loader: 'js' }));
      b.onResolve({ filter: new RegExp(`^${escape(`./${file}`)}$`), namespace }, () => ({ path: `./${file}`, external: true }));
    },
  };
}
const undiciBeside = beside('undici', 'undici.js');
const webPushBeside = beside('web-push', 'web-push.js');
const acpBeside = beside('@agentclientprotocol/sdk', 'acp.js');
const qrcodeBeside = beside('qrcode', 'qrcode.js');
await Promise.all([
  build({ ...common, entryPoints: ['extension/src/extension.ts'], outfile: out('extension.js'), external: ['vscode'], plugins: [undiciBeside, webPushBeside, acpBeside, qrcodeBeside] }),
  build({
    ...common,
    entryPoints: ['server/src/cli/main.ts'],
    outfile: out('cli.js'),
    banner: { js: '#!/usr/bin/env node' },
    plugins: [undiciBeside, webPushBeside, acpBeside],
  }),
  build({ ...common, entryPoints: ['node_modules/undici/index.js'], outfile: out('undici.js') }),
  build({ ...common, entryPoints: ['node_modules/web-push/src/index.js'], outfile: out('web-push.js') }),
  build({ ...common, stdin: { contents: "module.exports = require('@agentclientprotocol/sdk');", resolveDir: '.', loader: 'js' }, outfile: out('acp.js') }),
  build({ ...common, stdin: { contents: "module.exports = require('qrcode');", resolveDir: '.', loader: 'js' }, outfile: out('qrcode.js') }),
  // The phone's Markdown renderer and sanitiser for the desk's webviews (agent session, kept
  // conversation), which load it under their nonce CSP as window.deskrelayMarkdown.
  build({
    entryPoints: ['web/src/markdown.entry.ts'],
    outfile: 'media/markdown.js',
    bundle: true,
    format: 'iife',
    globalName: 'deskrelayMarkdown',
    platform: 'browser',
    target: ['es2021', 'chrome114'],
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  }),
]);
await chmod(out('cli.js'), 0o755);

// The phone web client (web/src → media/web/app.js, minified in every build; see build-web.mjs).
await buildWeb();
