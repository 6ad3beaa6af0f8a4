#!/usr/bin/env node
// The walk of one chat request (issue 27): which files of server/src run code while the relay
// serves ONE request through each chat door, after warm-up. bench/walk.ts runs a real relay
// (test/helpers/relay.ts) on loopback in front of the Ollama stand-in, sends each door's request,
// and reads V8's precise coverage (call counts, reset before each request) through the inspector;
// the bundle esbuild makes of it (not minified) says which source file each function is in.
// Counts files whose functions ran, not imports: a type-only import is no step of the walk.
//
//   node bench/walk.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const { build } = await import(pathToFileURL(join(HERE, '../node_modules/esbuild/lib/main.js')).href);
const dir = mkdtempSync(join(tmpdir(), 'deskrelay-walk-'));
const out = join(dir, 'walk.cjs');
try {
  await build({ entryPoints: [join(HERE, 'walk.ts')], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: out, logLevel: 'silent', absWorkingDir: join(HERE, '..') });
  const run = spawnSync(process.execPath, [out, out], { stdio: 'inherit', cwd: join(HERE, '..') });
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
