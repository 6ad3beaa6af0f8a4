import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { isDenied } from '../../paths';

export interface WalkOptions {
  /** The folder's real path. */
  root: string;
  /** Where to start, relative to root ('' for all). */
  under: string;
  deny: readonly RegExp[];
  /** Real paths never entered or listed (DeskRelay's config folder). */
  protect: readonly string[];
  signal?: AbortSignal;
}

interface Level {
  /** Relative to root, '' for root. */
  dir: string;
  rules: { base: string; ig: Ignore }[];
}

/**
 * Every file under a folder, relative and `/`-separated, in a stable order: what .gitignore
 * files (at any depth) ignore is skipped, as are denied files and git's database. Symbolic links
 * are not followed into folders (no loops, no escapes); a linked file is listed only when it
 * resolves inside the folder.
 */
export async function* walkFiles(options: WalkOptions): AsyncGenerator<string> {
  const { root, deny } = options;
  const rules = await parentRules(root, options.under);
  yield* walkDir({ dir: options.under, rules }, root, { deny, protect: options.protect }, options.signal);
}

interface Skip {
  deny: readonly RegExp[];
  protect: readonly string[];
}

async function* walkDir(level: Level, root: string, skip: Skip, signal: AbortSignal | undefined): AsyncGenerator<string> {
  const { deny } = skip;
  if (signal?.aborted) return;
  const abs = join(root, level.dir);
  let entries;
  try {
    entries = await readdir(abs, { withFileTypes: true });
  } catch {
    return;
  }
  const rules = [...level.rules];
  const own = await readIgnore(abs);
  if (own) rules.push({ base: level.dir, ig: own });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const rel = level.dir === '' ? entry.name : `${level.dir}/${entry.name}`;
    if (entry.name === '.git') continue;
    const full = join(abs, entry.name);
    if (skip.protect.some((p) => full === p || full.startsWith(p + sep))) continue;
    let isDir = entry.isDirectory();
    let isFile = entry.isFile();
    if (entry.isSymbolicLink()) {
      // Linked folders are not entered; a linked file counts when it stays inside.
      try {
        const real = await realpath(join(abs, entry.name));
        const info = await lstat(real);
        if (!info.isFile() || !real.startsWith(root.endsWith(sep) ? root : root + sep)) continue;
        if (skip.protect.some((p) => real === p || real.startsWith(p + sep))) continue;
        // A link onto a denied file is as denied as the file.
        if (isDenied(relative(root, real).split(sep).join('/'), deny)) continue;
        isFile = true;
        isDir = false;
      } catch {
        continue;
      }
    }
    if (ignored(rules, rel, isDir)) continue;
    if (isDir) yield* walkDir({ dir: rel, rules }, root, skip, signal);
    else if (isFile && !isDenied(rel, deny)) yield rel;
  }
}

function ignored(rules: Level['rules'], rel: string, isDir: boolean): boolean {
  for (const { base, ig } of rules) {
    const sub = base === '' ? rel : rel.slice(base.length + 1);
    if (ig.ignores(isDir ? `${sub}/` : sub)) return true;
  }
  return false;
}

async function readIgnore(dir: string): Promise<Ignore | undefined> {
  try {
    return ignore().add(await readFile(join(dir, '.gitignore'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** The .gitignore rules of root and every folder above `under`, so a walk from a subfolder skips what a whole walk would. */
async function parentRules(root: string, under: string): Promise<Level['rules']> {
  const rules: Level['rules'] = [];
  const parts = under === '' ? [] : under.split('/');
  for (let i = 0; i < parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    const ig = await readIgnore(join(root, dir));
    if (ig) rules.push({ base: dir, ig });
  }
  return rules;
}
