/**
 * `git diff` output cut into its files, so that what a file's path says may not be shown is
 * left out. Made for the output of `git diff --no-renames --src-prefix=a/ --dst-prefix=b/` with
 * `core.quotePath` on: a section starts at `diff --git "a/P" "b/P"` (quoted when P needs it),
 * `diff --cc P` / `diff --combined P` (a conflict) or `* Unmerged path P`. Inside a section no
 * line starts with `diff ` or `* `: hunk lines start with a space, `+`, `-`, `@` or `\`.
 */
export function filterDiff(diff: string, keep: (path: string) => boolean): { text: string; left: number } {
  const kept: string[] = [];
  const left = new Set<string>();
  // Nothing comes before the first header; if something did, it stays unshown.
  let showing = false;
  for (const line of diff.split(/(?<=\n)/)) {
    if (line.startsWith('diff ') || line.startsWith('* Unmerged path ')) {
      const path = sectionPath(line.replace(/\n$/, ''));
      // A header that cannot be read is left out with its section: never shown by mistake.
      showing = path !== undefined && keep(path);
      if (!showing) left.add(path ?? `\0${left.size}`);
    }
    if (showing) kept.push(line);
  }
  return { text: kept.join(''), left: left.size };
}

function sectionPath(header: string): string | undefined {
  for (const start of ['diff --cc ', 'diff --combined ', '* Unmerged path ']) {
    if (header.startsWith(start)) return unquoteWhole(header.slice(start.length));
  }
  if (!header.startsWith('diff --git ')) return undefined;
  const rest = header.slice('diff --git '.length);
  if (rest.startsWith('"')) {
    const a = readQuoted(rest, 0);
    if (!a || rest[a.end] !== ' ') return undefined;
    const b = readQuoted(rest, a.end + 1);
    if (!b || b.end !== rest.length) return undefined;
    return samePath(a.text, b.text);
  }
  // Unquoted, and both sides the same path (no renames): `a/P b/P`, split at the middle.
  if (rest.length % 2 === 0) return undefined;
  const half = (rest.length - 1) / 2;
  if (rest[half] !== ' ') return undefined;
  return samePath(rest.slice(0, half), rest.slice(half + 1));
}

function samePath(a: string, b: string): string | undefined {
  if (!a.startsWith('a/') || !b.startsWith('b/') || a.slice(2) !== b.slice(2)) return undefined;
  return a.slice(2);
}

function unquoteWhole(text: string): string | undefined {
  if (!text.startsWith('"')) return text;
  const q = readQuoted(text, 0);
  return q && q.end === text.length ? q.text : undefined;
}

const ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/** A C-style quoted string as git writes paths (octal escapes are bytes of UTF-8) starting at `at`. */
function readQuoted(text: string, at: number): { text: string; end: number } | undefined {
  if (text[at] !== '"') return undefined;
  const bytes: number[] = [];
  for (let i = at + 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') return { text: Buffer.from(bytes).toString('utf8'), end: i + 1 };
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const next = text[++i];
    if (next === undefined) return undefined;
    if (next in ESCAPES) bytes.push(ESCAPES[next]!);
    else if (/^[0-7]{3}$/.test(text.slice(i, i + 3))) {
      bytes.push(parseInt(text.slice(i, i + 3), 8));
      i += 2;
    } else return undefined;
  }
  return undefined;
}
