// Installs code-server (VS Code 1.96.4 for the browser, the last release on Node 20) into an
// ignored cache folder, from the npm registry alone: no binary or browser download.
// Idempotent: a stamp file marks a finished install for this code-server version and Node ABI.
// Usage: node scripts/vscode/install-code-server.mjs [cacheDir]
import { spawnSync, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CODE_SERVER_VERSION = '4.96.4';
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const defaultCacheDir = join(repoRoot, '.cache', 'code-server');

const stampOf = () => JSON.stringify({ codeServer: CODE_SERVER_VERSION, abi: process.versions.modules, arch: process.arch });

/** Path of code-server's entry script inside the cache. */
export const entryScript = (cacheDir = defaultCacheDir) => join(cacheDir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');

function step(message) {
  console.log(`[code-server] ${message}`);
}

function run(cmd, args, cwd, env = {}) {
  const started = Date.now();
  const r = spawnSync(cmd, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) {
    const tail = `${r.stdout ?? ''}\n${r.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`\`${cmd} ${args.join(' ')}\` failed in ${cwd} (exit ${r.status ?? r.signal}):\n${tail}`);
  }
  return Date.now() - started;
}

/** npm's bundled node-gyp: a separate node-gyp install would want to download headers. */
function nodeGypScript() {
  const candidates = [];
  if (process.env.npm_execpath) candidates.push(join(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  try {
    const globalRoot = execFileSync('npm', ['root', '-g'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    candidates.push(join(globalRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  } catch {
    /* fall through to the error below */
  }
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`npm's bundled node-gyp not found (looked in: ${candidates.join(', ')})`);
  return found;
}

/** Node's own headers, so node-gyp never downloads them. */
function nodeDir() {
  const dir = resolve(dirname(process.execPath), '..');
  if (!existsSync(join(dir, 'include', 'node', 'node.h'))) {
    throw new Error(`Node headers not found under ${dir}/include/node; install them (Debian: apt-get install -y libnode-dev or nodejs headers)`);
  }
  return dir;
}

function checkTools() {
  const missing = ['make', 'g++', 'python3'].filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
  if (missing.length) throw new Error(`building code-server's native modules needs ${missing.join(', ')} (apt-get install -y build-essential python3)`);
}

export function isInstalled(cacheDir = defaultCacheDir) {
  const stamp = join(cacheDir, '.deskrelay-ready');
  return existsSync(stamp) && readFileSync(stamp, 'utf8') === stampOf() && existsSync(entryScript(cacheDir));
}

export function ensureCodeServer(cacheDir = defaultCacheDir) {
  if (isInstalled(cacheDir)) {
    step(`code-server ${CODE_SERVER_VERSION} already installed in ${cacheDir}`);
    return { cacheDir, installedMs: 0 };
  }
  const started = Date.now();
  checkTools();
  const nodedir = nodeDir();
  const gypEnv = { npm_config_nodedir: nodedir };
  rmSync(cacheDir, { recursive: true, force: true });
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(join(cacheDir, 'package.json'), '{"name":"deskrelay-code-server-cache","private":true}\n');

  step(`1/4 npm install code-server@${CODE_SERVER_VERSION} (scripts skipped) …`);
  let ms = run('npm', ['install', '--ignore-scripts', '--no-save', '--no-package-lock', `code-server@${CODE_SERVER_VERSION}`], cacheDir, gypEnv);
  step(`    done in ${(ms / 1000).toFixed(1)} s`);

  const csDir = join(cacheDir, 'node_modules', 'code-server');
  const vscodeDir = join(csDir, 'lib', 'vscode');
  step('2/4 installing VS Code server dependencies (without its git-pinned shrinkwrap) …');
  rmSync(join(vscodeDir, 'npm-shrinkwrap.json'), { force: true });
  ms = run('npm', ['install', '--ignore-scripts', '--omit=dev', '--no-package-lock'], vscodeDir, gypEnv);
  rmSync(join(vscodeDir, 'node_modules.asar'), { recursive: true, force: true });
  symlinkSync('node_modules', join(vscodeDir, 'node_modules.asar'));
  step(`    done in ${(ms / 1000).toFixed(1)} s`);

  step('3/4 building native modules @vscode/spdlog, native-watchdog, node-pty …');
  ms = run('npm', ['rebuild', '@vscode/spdlog', 'native-watchdog', 'node-pty'], vscodeDir, gypEnv);
  step(`    done in ${(ms / 1000).toFixed(1)} s`);

  step("4/4 building code-server's argon2 binding …");
  const argon2Dir = join(cacheDir, 'node_modules', 'argon2');
  ms = run(
    process.execPath,
    [nodeGypScript(), 'rebuild', `--nodedir=${nodedir}`, '--module_name=argon2', '--module_path=lib/binding/napi-v3', '--napi_build_version=3'],
    argon2Dir,
  );
  mkdirSync(join(argon2Dir, 'lib', 'binding', 'napi-v3'), { recursive: true });
  copyFileSync(join(argon2Dir, 'build', 'Release', 'argon2.node'), join(argon2Dir, 'lib', 'binding', 'napi-v3', 'argon2.node'));
  step(`    done in ${(ms / 1000).toFixed(1)} s`);

  writeFileSync(join(cacheDir, '.deskrelay-ready'), stampOf());
  const installedMs = Date.now() - started;
  step(`installed in ${(installedMs / 1000).toFixed(1)} s`);
  return { cacheDir, installedMs };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    ensureCodeServer(process.argv[2] ? resolve(process.argv[2]) : defaultCacheDir);
  } catch (err) {
    console.error(`[code-server] install failed: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
}
