// Builds the phone web client: web/src/*.ts (with the shared wire protocol, marked and DOMPurify)
// into minified ES modules: media/web/app.js, the page's entry, and media/web/chunks/*.js, what it
// imports on first use (the agent's screens, voice) and the code those share with it; next to the page's index.html and app.css; the
// libraries' licences go to media/web/vendor; the home-screen icons (make-web-icons.mjs) and the
// service worker (web/sw/sw.ts → media/web/sw.js) are built beside them. All are ignored by git
// (media/web/.gitignore). Each text file also gets `.br` and `.gz` copies that the relay serves.
// Each file is written whole then renamed into place, so test files building at the same time
// never serve a half-written bundle.
// Usage: node scripts/build-web.mjs [--quiet]   (scripts/build.mjs runs it too)
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeWebIcons } from './make-web-icons.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const WEB = join(ROOT, 'media', 'web');

/**
 * What the service worker keeps so the app opens offline (paths as the page requests them); the
 * build adds every chunk (`/chunks/…`), so the agent and voice open offline too.
 */
export const SHELL = [
  '/',
  '/app.js',
  '/app.css',
  // The agent's styles, loaded with its chunk (main.ts), kept so the agent opens offline.
  '/agent.css',
  '/voice.css',
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
  // Code splitting: each dynamic import() becomes a chunk, fetched when the page first needs it.
  const result = await build({ ...browser, entryPoints: { app: 'web/src/main.ts' }, outdir: WEB, splitting: true, chunkNames: 'chunks/[name]-[hash]' });
  await mkdir(join(WEB, 'vendor'), { recursive: true });
  await mkdir(join(WEB, 'chunks'), { recursive: true });
  for (const file of result.outputFiles) await writeAtomic(file.path, file.contents);
  const chunks = result.outputFiles.map((f) => relative(WEB, f.path).split(sep).join('/')).filter((f) => f.startsWith('chunks/')).sort();
  // Chunks of earlier builds (their names carry their contents' hash) go, with their copies.
  for (const f of await readdir(join(WEB, 'chunks'))) {
    if (!chunks.includes(`chunks/${f.replace(/\.(br|gz)$/, '')}`)) await rm(join(WEB, 'chunks', f), { force: true });
  }
  const shell = [...SHELL, ...chunks.map((f) => `/${f}`)];
  // highlight.js (core + a small language set) on its own: the page imports it at the first code block.
  const hl = await build({ ...browser, entryPoints: ['web/src/highlight.entry.ts'], outfile: join(WEB, 'vendor', 'highlight.js') });
  await writeAtomic(hl.outputFiles[0].path, hl.outputFiles[0].contents);
  // jsQR on its own too: the pairing screen imports it to read a QR code where BarcodeDetector cannot.
  const qr = await build({ ...browser, entryPoints: ['web/src/jsqr.entry.ts'], outfile: join(WEB, 'vendor', 'jsqr.js') });
  await writeAtomic(qr.outputFiles[0].path, qr.outputFiles[0].contents);
  makeWebIcons(join(WEB, 'icons'));
  // The service worker caches exactly the shell, under a name that changes with its contents.
  const hash = createHash('sha256');
  for (const path of shell) hash.update(path).update(await readFile(join(WEB, path === '/' ? 'index.html' : path.slice(1))));
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
    define: { __SHELL__: JSON.stringify(shell), __VERSION__: JSON.stringify(hash.digest('hex').slice(0, 16)) },
  });
  await writeAtomic(sw.outputFiles[0].path, sw.outputFiles[0].contents);
  await Promise.all([
    copyFile(join(ROOT, 'node_modules/marked/LICENSE'), join(WEB, 'vendor', 'marked.LICENSE')),
    copyFile(join(ROOT, 'node_modules/dompurify/LICENSE'), join(WEB, 'vendor', 'purify.LICENSE')),
    copyFile(join(ROOT, 'node_modules/highlight.js/LICENSE'), join(WEB, 'vendor', 'highlight.LICENSE')),
    copyFile(join(ROOT, 'node_modules/jsqr/LICENSE'), join(WEB, 'vendor', 'jsqr.LICENSE')),
  ]);
  await precompress(chunks);
  return sizes();
}

/** What the relay serves compressed (sirv picks `.br`, then `.gz`, by the request's Accept-Encoding), with every chunk. */
export const COMPRESSED = ['index.html', 'app.css', 'agent.css', 'voice.css', 'app.js', 'sw.js', 'manifest.webmanifest', 'vendor/highlight.js', 'vendor/jsqr.js'];

/** The chunks of the last build, as paths under media/web. */
export async function chunkFiles() {
  return (await readdir(join(WEB, 'chunks')).catch(() => [])).filter((f) => f.endsWith('.js')).sort().map((f) => `chunks/${f}`);
}

/** app.js and the chunks it imports statically: what the page runs before its first paint. */
export async function pageScripts() {
  const out = [];
  const visit = async (f) => {
    if (out.includes(f)) return;
    out.push(f);
    const text = await readFile(join(WEB, f), 'utf8');
    for (const m of text.matchAll(/(?:^|[;}\s])import\s*(?:[\w$*{][^"']*?from\s*)?["']\.\/((?:chunks\/)?[\w.-]+\.js)["']/g)) {
      await visit(f.startsWith('chunks/') ? `chunks/${m[1].replace(/^chunks\//, '')}` : m[1]);
    }
  };
  await visit('app.js');
  return out;
}

/**
 * Brotli and gzip copies beside each text file, made once at build time at the highest levels,
 * so the relay never compresses on the fly (and never touches the API's streams).
 */
async function precompress(chunks) {
  for (const f of [...COMPRESSED, ...chunks]) {
    const buf = await readFile(join(WEB, f));
    await writeAtomic(join(WEB, `${f}.br`), brotliCompressSync(buf, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: buf.length } }));
    await writeAtomic(join(WEB, `${f}.gz`), gzipSync(buf, { level: 9 }));
  }
}

/** The page as a phone downloads it: every file the shell needs, raw and gzipped. */
export async function sizes() {
  const files = ['index.html', 'app.css', 'app.js', ...(await chunkFiles()), 'sw.js', 'manifest.webmanifest', 'vendor/highlight.js', 'vendor/jsqr.js'];
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
    // What a phone downloads to open the page; the chunks it fetches later (agent, voice) and
    // highlight.js (at the first code block) come on top.
    const first = ['index.html', 'app.css', ...(await pageScripts())];
    const shell = files.filter((f) => first.includes(f.file));
    const kib = (key) => (shell.reduce((a, f) => a + f[key], 0) / 1024).toFixed(1);
    console.log(`[web] ${files.map((f) => `${f.file} ${(f.bytes / 1024).toFixed(1)} KiB (${(f.gzip / 1024).toFixed(1)} KiB gzip, ${(f.brotli / 1024).toFixed(1)} KiB br)`).join(', ')}; the page ${kib('gzip')} KiB gzip, ${kib('brotli')} KiB brotli`);
  }
}
