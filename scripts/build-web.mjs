// Builds the phone web client: web/src/*.ts (with the shared wire protocol, marked and DOMPurify)
// into one minified ES module, media/web/app.js, next to the page's index.html and app.css; the
// libraries' licences go to media/web/vendor; the home-screen icons (make-web-icons.mjs) and the
// service worker (web/sw/sw.ts → media/web/sw.js) are built beside them. All are ignored by git
// (media/web/.gitignore). Each text file also gets `.br` and `.gz` copies that the relay serves.
// Each file is written whole then renamed into place, so test files building at the same time
// never serve a half-written bundle.
// Usage: node scripts/build-web.mjs [--quiet]   (scripts/build.mjs runs it too)
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeWebIcons } from './make-web-icons.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const WEB = join(ROOT, 'media', 'web');

/** What the service worker keeps so the app opens offline (paths as the page requests them). */
export const SHELL = [
  '/',
  '/app.js',
  '/app.css',
  '/manifest.webmanifest',
  '/icons/icon-192.png',
  '/icons/icon-512.png',
  '/icons/apple-touch-icon.png',
  // Not loaded by the page until a code block appears, but kept so saved chats highlight offline.
  '/vendor/highlight.js',
];

async function writeAtomic(path, contents) {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(tmp, contents);
  await rename(tmp, path);
}

/** Returns the shipped files with their raw and gzip sizes. */
export async function buildWeb() {
  // Safari 15 (iOS 15) and every evergreen browser; both bundles alike.
  const browser = {
    absWorkingDir: ROOT,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2021', 'safari15', 'chrome100', 'firefox100'],
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    write: false,
  };
  const result = await build({ ...browser, entryPoints: { app: 'web/src/main.ts' }, outdir: WEB });
  await mkdir(join(WEB, 'vendor'), { recursive: true });
  for (const file of result.outputFiles) await writeAtomic(file.path, file.contents);
  // highlight.js (core + a small language set) on its own: the page imports it at the first code block.
  const hl = await build({ ...browser, entryPoints: ['web/src/highlight.entry.ts'], outfile: join(WEB, 'vendor', 'highlight.js') });
  await writeAtomic(hl.outputFiles[0].path, hl.outputFiles[0].contents);
  makeWebIcons(join(WEB, 'icons'));
  // The service worker caches exactly the shell, under a name that changes with its contents.
  const hash = createHash('sha256');
  for (const path of SHELL) hash.update(path).update(await readFile(join(WEB, path === '/' ? 'index.html' : path.slice(1))));
  const sw = await build({
    absWorkingDir: ROOT,
    entryPoints: ['web/sw/sw.ts'],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['es2021', 'safari15'],
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    write: false,
    outfile: join(WEB, 'sw.js'),
    define: { __SHELL__: JSON.stringify(SHELL), __VERSION__: JSON.stringify(hash.digest('hex').slice(0, 16)) },
  });
  await writeAtomic(sw.outputFiles[0].path, sw.outputFiles[0].contents);
  await Promise.all([
    copyFile(join(ROOT, 'node_modules/marked/LICENSE'), join(WEB, 'vendor', 'marked.LICENSE')),
    copyFile(join(ROOT, 'node_modules/dompurify/LICENSE'), join(WEB, 'vendor', 'purify.LICENSE')),
    copyFile(join(ROOT, 'node_modules/highlight.js/LICENSE'), join(WEB, 'vendor', 'highlight.LICENSE')),
  ]);
  await precompress();
  return sizes();
}

/** What the relay serves compressed (sirv picks `.br`, then `.gz`, by the request's Accept-Encoding). */
export const COMPRESSED = ['index.html', 'app.css', 'app.js', 'sw.js', 'manifest.webmanifest', 'vendor/highlight.js'];

/**
 * Brotli and gzip copies beside each text file, made once at build time at the highest levels,
 * so the relay never compresses on the fly (and never touches the API's streams).
 */
async function precompress() {
  for (const f of COMPRESSED) {
    const buf = await readFile(join(WEB, f));
    await writeAtomic(join(WEB, `${f}.br`), brotliCompressSync(buf, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: buf.length } }));
    await writeAtomic(join(WEB, `${f}.gz`), gzipSync(buf, { level: 9 }));
  }
}

/** The page as a phone downloads it: every file the shell needs, raw and gzipped. */
export async function sizes() {
  const files = ['index.html', 'app.css', 'app.js', 'sw.js', 'manifest.webmanifest', 'vendor/highlight.js'];
  const out = [];
  for (const f of files) {
    const buf = await readFile(join(WEB, f));
    out.push({ file: f, bytes: buf.length, gzip: gzipSync(buf, { level: 9 }).length, brotli: brotliCompressSync(buf, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }).length });
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = await buildWeb();
  if (!process.argv.includes('--quiet')) {
    // What a phone downloads to open the page; highlight.js comes on top at the first code block.
    const shell = files.filter((f) => ['index.html', 'app.css', 'app.js'].includes(f.file));
    const kib = (key) => (shell.reduce((a, f) => a + f[key], 0) / 1024).toFixed(1);
    console.log(`[web] ${files.map((f) => `${f.file} ${(f.bytes / 1024).toFixed(1)} KiB (${(f.gzip / 1024).toFixed(1)} KiB gzip, ${(f.brotli / 1024).toFixed(1)} KiB br)`).join(', ')}; the page ${kib('gzip')} KiB gzip, ${kib('brotli')} KiB brotli`);
  }
}
