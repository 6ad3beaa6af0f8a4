// Makes sure Debian's Chromium is there for the browser suites (the phone web client's tests and
// the real-VS-Code e2e), from Debian's own packages: no browser download of its own; then WebKit
// (webkit2gtk-driver + xvfb) for the web client's WebKit suite, through install-webkit.mjs.
// Run by `npm test` before vitest. When Chromium is missing and we are root, it runs
// `apt-get update` then `apt-get install -y chromium` (non-interactive); otherwise it stops at
// once with one line naming the command to run.
// DESKRELAY_CHROMIUM overrides the path checked (the tests use it to play a machine without it).
// Usage: node scripts/install-chromium.mjs
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';
export const INSTALL_COMMAND = 'apt-get update && apt-get install -y chromium';

function step(message) {
  console.log(`[chromium] ${message}`);
}

function run(cmd, args) {
  const started = Date.now();
  const r = spawnSync(cmd, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) {
    const tail = `${r.stdout ?? ''}\n${r.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`\`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.error?.message ?? r.signal}):\n${tail}`);
  }
  return Date.now() - started;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * Returns the Chromium path once it exists. Installs it with apt-get when missing and root;
 * throws an error whose message is the one line to print otherwise.
 */
export function ensureChromium(path = process.env.DESKRELAY_CHROMIUM || DEFAULT_CHROMIUM, { root = isRoot() } = {}) {
  if (existsSync(path)) {
    step(`Chromium found at ${path}`);
    return path;
  }
  if (!root) {
    throw new Error(`Chromium not found at ${path}; the browser tests need it: run \`sudo apt-get update && sudo apt-get install -y chromium\`, then npm test again`);
  }
  if (spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(`Chromium not found at ${path} and there is no apt-get to install it: install Chromium there (Debian: \`${INSTALL_COMMAND}\`), then npm test again`);
  }
  step(`not found at ${path}: installing Debian's chromium …`);
  step('1/2 apt-get update …');
  let ms = run('apt-get', ['update', '-qq']);
  step(`    done in ${(ms / 1000).toFixed(1)} s`);
  step('2/2 apt-get install -y chromium …');
  ms = run('apt-get', ['install', '-y', '-qq', 'chromium']);
  step(`    done in ${(ms / 1000).toFixed(1)} s`);
  if (!existsSync(path)) throw new Error(`Debian's chromium installed, but ${path} is still missing`);
  return path;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    ensureChromium();
  } catch (err) {
    console.error(`[chromium] ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
  // WebKit for the web client's WebKit suite, the same way (install-webkit.mjs). Not when a test
  // plays a machine without Chromium (DESKRELAY_CHROMIUM): that run is about Chromium alone.
  if (!process.env.DESKRELAY_CHROMIUM) {
    const { ensureWebKit } = await import('./install-webkit.mjs');
    try {
      ensureWebKit();
    } catch (err) {
      console.error(`[webkit] ${err instanceof Error ? err.message : err}`);
      process.exit(1);
    }
  }
}
