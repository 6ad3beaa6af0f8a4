// Builds the phone web client: web/src/*.ts (with the shared wire protocol, marked and DOMPurify)
// into one minified ES module, media/web/app.js, next to the page's index.html and app.css; the
// libraries' licences go to media/web/vendor. Both outputs are ignored by git (media/web/.gitignore).
// Each file is written whole then renamed into place, so test files building at the same time
// never serve a half-written bundle.
// Usage: node scripts/build-web.mjs [--quiet]   (scripts/build.mjs runs it too)
import { build } from 'esbuild';
import { copyFile, mkdir, rename, writeFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const WEB = join(ROOT, 'media', 'web');

async function writeAtomic(path, contents) {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(tmp, contents);
  await rename(tmp, path);
}

/** Returns the shipped files with their raw and gzip sizes. */
export async function buildWeb() {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { app: 'web/src/main.ts' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // Safari 15 (iOS 15) and every evergreen browser.
    target: ['es2021', 'safari15', 'chrome100', 'firefox100'],
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    write: false,
    outdir: WEB,
  });
  await mkdir(join(WEB, 'vendor'), { recursive: true });
  for (const file of result.outputFiles) await writeAtomic(file.path, file.contents);
  await Promise.all([
    copyFile(join(ROOT, 'node_modules/marked/LICENSE'), join(WEB, 'vendor', 'marked.LICENSE')),
    copyFile(join(ROOT, 'node_modules/dompurify/LICENSE'), join(WEB, 'vendor', 'purify.LICENSE')),
  ]);
  return sizes();
}

/** The page as a phone downloads it: every file the shell needs, raw and gzipped. */
export async function sizes() {
  const { readFile } = await import('node:fs/promises');
  const files = ['index.html', 'app.css', 'app.js'];
  const out = [];
  for (const f of files) {
    const buf = await readFile(join(WEB, f));
    out.push({ file: f, bytes: buf.length, gzip: gzipSync(buf, { level: 9 }).length });
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = await buildWeb();
  if (!process.argv.includes('--quiet')) {
    const total = files.reduce((a, f) => a + f.gzip, 0);
    console.log(`[web] ${files.map((f) => `${f.file} ${(f.bytes / 1024).toFixed(1)} KiB (${(f.gzip / 1024).toFixed(1)} KiB gzip)`).join(', ')}; shell ${(total / 1024).toFixed(1)} KiB gzip`);
  }
}
