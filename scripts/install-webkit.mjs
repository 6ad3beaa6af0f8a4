// Makes sure WebKit is there for the phone web client's WebKit suite (test/web/webkit.test.ts),
// from Debian's own packages, no browser download of its own: webkit2gtk-driver (WebKitWebDriver,
// W3C WebDriver, with WebKitGTK's MiniBrowser) and xvfb (a display for it). Like
// install-chromium.mjs: when missing and root, `apt-get update` then `apt-get install -y
// webkit2gtk-driver xvfb` (non-interactive); otherwise it stops with one line naming the command.
// Run by install-chromium.mjs (so by npm test) and by the WebKit suite itself before it starts.
// Usage: node scripts/install-webkit.mjs     (prints the found paths as JSON on the last line)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGES = ['webkit2gtk-driver', 'xvfb'];
export const INSTALL_COMMAND = `apt-get update && apt-get install -y ${PACKAGES.join(' ')}`;

function step(message) {
  console.log(`[webkit] ${message}`);
}

/** WebKitGTK's MiniBrowser, wherever the architecture puts it (/usr/lib/<triplet>/webkit2gtk-4.x/). */
function findMiniBrowser() {
  const lib = '/usr/lib';
  if (!existsSync(lib)) return undefined;
  for (const dir of readdirSync(lib)) {
    for (const version of ['webkit2gtk-4.1', 'webkitgtk-6.0', 'webkit2gtk-4.0']) {
      const path = join(lib, dir, version, 'MiniBrowser');
      if (existsSync(path)) return path;
    }
  }
  return undefined;
}

function found() {
  const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim() || undefined;
  return { driver: which('WebKitWebDriver'), xvfb: which('Xvfb'), browser: findMiniBrowser() };
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) {
    const tail = `${r.stdout ?? ''}\n${r.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`\`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.error?.message ?? r.signal}):\n${tail}`);
  }
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Returns { driver, xvfb, browser } once all three exist; installs them when missing and root. */
export function ensureWebKit({ root = isRoot() } = {}) {
  let paths = found();
  if (paths.driver && paths.xvfb && paths.browser) {
    step(`WebKitWebDriver found at ${paths.driver}`);
    return paths;
  }
  if (!root) throw new Error(`WebKitWebDriver or Xvfb not found; the WebKit tests need them: run \`sudo ${INSTALL_COMMAND.replace('&& apt-get', '&& sudo apt-get')}\`, then npm test again`);
  if (spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(`WebKitWebDriver or Xvfb not found and there is no apt-get to install them (Debian: \`${INSTALL_COMMAND}\`)`);
  }
  step(`installing Debian's ${PACKAGES.join(' and ')} …`);
  run('apt-get', ['update', '-qq']);
  run('apt-get', ['install', '-y', '-qq', ...PACKAGES]);
  paths = found();
  if (!paths.driver || !paths.xvfb || !paths.browser) throw new Error(`installed ${PACKAGES.join(' ')}, but something is still missing: ${JSON.stringify(paths)}`);
  return paths;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    console.log(JSON.stringify(ensureWebKit()));
  } catch (err) {
    console.error(`[webkit] ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
}
