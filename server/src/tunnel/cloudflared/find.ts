import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { DEFAULT_CLOUDFLARED_BIN, install } from 'cloudflared';
import { TunnelError } from '../errors';
import { isExecutable } from '../find';

export interface FindOptions {
  /** The `deskrelay.cloudflaredPath` setting or `--cloudflared`: used as given, never replaced by another binary. */
  explicitPath?: string;
  /** Where `CLOUDFLARED_BIN` and `PATH` are read; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Folder holding a binary installed by the `cloudflared` npm package (or `installCloudflared`). */
  packageBinDir?: string;
  platform?: NodeJS.Platform;
}

export const INSTALL_HELP = [
  'Install cloudflared, then try again:',
  '  Linux:   Cloudflare\'s apt repository (https://pkg.cloudflare.com/) or the .deb / binary from',
  '           https://github.com/cloudflare/cloudflared/releases/latest',
  '  macOS:   brew install cloudflared',
  '  Windows: winget install --id Cloudflare.cloudflared',
  'Or point DeskRelay at it: the deskrelay.cloudflaredPath setting, --cloudflared PATH, or CLOUDFLARED_BIN.',
].join('\n');

/**
 * Finds the user's cloudflared: explicit path, then CLOUDFLARED_BIN, then PATH, then the npm
 * package's own install folder. Throws a TunnelError naming the path, or listing install steps.
 */
export function findCloudflared(opts: FindOptions = {}): string {
  const env = opts.env ?? process.env;
  const platform = opts.platform ?? process.platform;

  const explicit = opts.explicitPath?.trim();
  if (explicit) return checkChosen(expandHome(explicit), 'the cloudflared path you set (deskrelay.cloudflaredPath / --cloudflared)', platform);

  // Set on purpose by the user: a wrong value is an error, not a reason to look elsewhere.
  const fromEnv = env.CLOUDFLARED_BIN?.trim();
  if (fromEnv) return checkChosen(expandHome(fromEnv), 'CLOUDFLARED_BIN', platform);

  const searched: string[] = [];
  const exe = platform === 'win32' ? 'cloudflared.exe' : 'cloudflared';
  const names = platform === 'win32' ? windowsNames(env) : ['cloudflared'];
  const pathVar = (platform === 'win32' ? env.Path ?? env.PATH : env.PATH) ?? '';
  const delimiter = platform === 'win32' ? ';' : ':';
  for (const dir of pathVar.split(delimiter)) {
    if (!dir) continue;
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (isExecutable(candidate, platform)) return candidate;
    }
  }
  searched.push('PATH');

  const pkgDir = opts.packageBinDir ?? packageBinDirDefault();
  if (pkgDir) {
    const candidate = path.join(pkgDir, exe);
    if (isExecutable(candidate, platform)) return candidate;
    searched.push(pkgDir);
  }

  throw new TunnelError(
    `cloudflared was not found (looked in ${searched.join(' and ')}). DeskRelay opens the tunnel with your own cloudflared.\n${INSTALL_HELP}`,
    [],
    'agent-missing',
  );
}

/**
 * Downloads cloudflared into `dir` with the `cloudflared` package's `install()` (the extension's
 * "Install cloudflared" action). Returns the binary's path; pass `dir` as `packageBinDir` later.
 */
export async function installCloudflared(dir: string): Promise<string> {
  const target = path.join(dir, process.platform === 'win32' ? 'cloudflared.exe' : 'cloudflared');
  try {
    return await install(target);
  } catch (err) {
    throw new TunnelError(`Installing cloudflared into ${dir} failed: ${(err as Error).message}\n${INSTALL_HELP}`, [], 'agent-missing');
  }
}

/**
 * A path the user chose. A path that does not exist most often means cloudflared was never
 * installed (or was uninstalled) rather than a typo, so the message carries the same install
 * steps as when PATH has none (SPEC: names cloudflared, says the path was not found, says how to
 * install it).
 */
function checkChosen(file: string, source: string, platform: NodeJS.Platform): string {
  let stat;
  try {
    stat = statSync(file);
  } catch {
    throw new TunnelError(
      `cloudflared was not found at ${file} (the path given by ${source}): no such file. Fix or clear the path, or install cloudflared there.\n${INSTALL_HELP}`,
      [],
      'agent-missing',
    );
  }
  if (!stat.isFile()) throw new TunnelError(`${file} (from ${source}) is not a file; it should be the cloudflared binary.`, [], 'agent-missing');
  if (!isExecutable(file, platform)) {
    throw new TunnelError(`${file} (from ${source}) is not executable (chmod +x it).`, [], 'agent-missing');
  }
  return file;
}

function windowsNames(env: NodeJS.ProcessEnv): string[] {
  const exts = (env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean);
  return exts.map((ext) => `cloudflared${ext.toLowerCase()}`);
}

function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? path.join(homedir(), p.slice(1)) : p;
}

/**
 * The package's `bin/` folder. Bundled into dist/*.js, the package's own `__dirname` (behind
 * DEFAULT_CLOUDFLARED_BIN) points at dist/, so ask Node's resolver where the package lives; a
 * shipped .vsix has no node_modules, and then there is nothing here to find.
 */
function packageBinDirDefault(): string | undefined {
  if (typeof require === 'function') {
    try {
      return path.join(path.dirname(require.resolve('cloudflared/package.json')), 'bin');
    } catch {
      return undefined;
    }
  }
  return path.dirname(DEFAULT_CLOUDFLARED_BIN);
}
