import type { Dirent } from 'node:fs';
import { lstat, readdir, realpath } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { isDenied, isDeniedDir, isDeniedFile, readSmallFile } from '../../paths';

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
 * files (at any depth) ignore is skipped, as are denied files and folders (git's database, `.ssh`…).
 * Symbolic links are not followed into folders (no loops, no escapes); a linked file is listed
 * only when it resolves inside the folder. Only regular files are listed, by the type readdir
 * gives (a FIFO, socket or device is never opened).
 *
 * One generator with its own stack of folders, not one generator per folder: a file passed up
 * through a `yield*` per level of depth cost more than finding it (bench/agent.mjs, issue 28).
 */
export async function* walkFiles(options: WalkOptions): AsyncGenerator<string> {
  const { root, deny, signal } = options;
  const rootPrefix = root.endsWith(sep) ? root : root + sep;
  // Only protected paths inside the folder can be met on the way; usually there are none.
  const protect = options.protect.filter((p) => p === root || p.startsWith(rootPrefix) || rootPrefix.startsWith(p + sep));
  const isProtected = (full: string) => protect.some((p) => full === p || full.startsWith(p + sep));
  const first = await listDir({ dir: options.under, rules: await parentRules(root, options.under) }, root);
  if (!first) return;
  const stack: Frame[] = [first];
  while (stack.length > 0) {
    if (signal?.aborted) return;
    const frame = stack[stack.length - 1]!;
    if (frame.next >= frame.entries.length) {
      stack.pop();
      continue;
    }
    const entry = frame.entries[frame.next++]!;
    if (isDeniedDir(entry.name)) continue;
    const { dir, rules } = frame.level;
    const rel = dir === '' ? entry.name : `${dir}/${entry.name}`;
    // Joined only when needed: a join per entry was ~9% of the relay's busy time in a search (profile, issue 28).
    if (protect.length > 0 && isProtected(join(frame.abs, entry.name))) continue;
    let isDir = entry.isDirectory();
    let isFile = entry.isFile();
    if (entry.isSymbolicLink()) {
      // Linked folders are not entered; a linked file counts when it stays inside.
      try {
        const real = await realpath(join(frame.abs, entry.name));
        const info = await lstat(real);
        if (!info.isFile() || !real.startsWith(rootPrefix)) continue;
        if (protect.some((p) => real === p || real.startsWith(p + sep))) continue;
        // A link onto a denied file is as denied as the file.
        if (isDenied(relative(root, real).split(sep).join('/'), deny)) continue;
        isFile = true;
        isDir = false;
      } catch {
        continue;
      }
    }
    if (ignored(rules, rel, isDir)) continue;
    if (isDir) {
      const child = await listDir({ dir: rel, rules }, root);
      if (child) stack.push(child);
    } else if (isFile && !isDeniedFile(entry.name, rel, deny)) yield rel;
  }
}

interface Frame {
  level: Level;
  abs: string;
  entries: Dirent[];
  next: number;
}

/** A folder's entries in name order and the rules in force inside it (its own .gitignore added); undefined when it cannot be read. */
async function listDir(level: Level, root: string): Promise<Frame | undefined> {
  const abs = join(root, level.dir);
  const entries = await readdir(abs, { withFileTypes: true }).catch(() => undefined);
  if (!entries) return undefined;
  // Read only where there is one: a failed open per folder was ~7% of the relay's busy time in a search (profile, issue 28).
  const own = entries.some((e) => e.name === '.gitignore') ? await readIgnore(abs) : undefined;
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { level: { dir: level.dir, rules: own ? [...level.rules, { base: level.dir, ig: own }] : level.rules }, abs, entries, next: 0 };
}

function ignored(rules: Level['rules'], rel: string, isDir: boolean): boolean {
  for (const { base, ig } of rules) {
    const sub = base === '' ? rel : rel.slice(base.length + 1);
    if (ig.ignores(isDir ? `${sub}/` : sub)) return true;
  }
  return false;
}

/** A .gitignore larger than this is not read (a real one is a few KiB). */
const MAX_IGNORE_BYTES = 1024 * 1024;

async function readIgnore(dir: string): Promise<Ignore | undefined> {
  // Non-blocking: a FIFO named .gitignore must not hold a pool thread waiting for a writer.
  const bytes = await readSmallFile(join(dir, '.gitignore'), MAX_IGNORE_BYTES);
  return bytes && ignore().add(bytes.toString('utf8'));
}

/**
 * Whether a folder-relative file is ignored by the .gitignore of root or of a folder above
 * `under`: what a search started at `under` by another walker (ripgrep, which reads the rules
 * from `under` down) must still leave out.
 */
export async function ignoredAbove(root: string, under: string): Promise<(rel: string) => boolean> {
  const rules = await parentRules(root, under);
  return (rel) => rules.length > 0 && ignored(rules, rel, false);
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
