/**
 * A unified diff (`diff -u` form, 3 lines of context) of two texts, for the approval a phone
 * shows before an edit. Line-based Myers (O((N+M)·D)); past MAX_EDIT_DISTANCE differing lines
 * the whole old text is shown as replaced, which stays correct, only less compact.
 */
const CONTEXT = 3;
const MAX_EDIT_DISTANCE = 4000;

type Op = { kind: ' ' | '-' | '+'; line: string };

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function myers(a: string[], b: string[]): Op[] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    const next = v.slice();
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      next[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, d, offset);
    }
    v = next;
  }
  return undefined;
}

function backtrack(trace: Int32Array[], a: string[], b: string[], dEnd: number, offset: number): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = dEnd; d > 0; d--) {
    const v = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? k + 1 : k - 1;
    const prevX = v[offset + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push({ kind: ' ', line: a[--x]! });
      y--;
    }
    if (x === prevX) ops.push({ kind: '+', line: b[--y]! });
    else ops.push({ kind: '-', line: a[--x]! });
  }
  while (x > 0 && y > 0) {
    ops.push({ kind: ' ', line: a[--x]! });
    y--;
  }
  return ops.reverse();
}

/** The unified diff turning `before` into `after`; '' when they are equal. `before` undefined: a new file. */
export function unifiedDiff(path: string, before: string | undefined, after: string): string {
  if (before === after) return '';
  const a = splitLines(before ?? '');
  const b = splitLines(after);
  const ops = myers(a, b) ?? [...a.map((line): Op => ({ kind: '-', line })), ...b.map((line): Op => ({ kind: '+', line }))];
  const out = [before === undefined ? '--- /dev/null' : `--- a/${path}`, `+++ b/${path}`];
  // Hunks: runs of changes with up to CONTEXT unchanged lines around, merged when close.
  let i = 0;
  while (i < ops.length) {
    while (i < ops.length && ops[i]!.kind === ' ') i++;
    if (i >= ops.length) break;
    let start = Math.max(0, i - CONTEXT);
    let end = i;
    for (;;) {
      while (end < ops.length && ops[end]!.kind !== ' ') end++;
      let same = end;
      while (same < ops.length && ops[same]!.kind === ' ') same++;
      if (same < ops.length && same - end <= 2 * CONTEXT) end = same;
      else {
        end = Math.min(ops.length, end + CONTEXT);
        break;
      }
    }
    let oldLine = 1;
    let newLine = 1;
    for (let j = 0; j < start; j++) {
      if (ops[j]!.kind !== '+') oldLine++;
      if (ops[j]!.kind !== '-') newLine++;
    }
    const hunk = ops.slice(start, end);
    const oldCount = hunk.filter((o) => o.kind !== '+').length;
    const newCount = hunk.filter((o) => o.kind !== '-').length;
    out.push(`@@ -${oldCount === 0 ? oldLine - 1 : oldLine},${oldCount} +${newCount === 0 ? newLine - 1 : newLine},${newCount} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    i = end;
    start = end;
  }
  let text = `${out.join('\n')}\n`;
  if (before !== undefined && before !== '' && !before.endsWith('\n')) text += '\\ No newline at end of file (before)\n';
  if (after !== '' && !after.endsWith('\n')) text += '\\ No newline at end of file\n';
  return text;
}

/**
 * The text before a change, from the text after it and the change's unified diff (as made
 * above): what the desk's diff editor shows on the left for an edit the agent applied. Undefined
 * when `after` no longer matches the diff (the file changed since).
 */
export function reverseDiff(diff: string, after: string): string | undefined {
  const b = splitLines(after);
  const out: string[] = [];
  let at = 0; // next line of `after` not yet copied
  let beforeHasNewline = true;
  for (const line of diff.split('\n')) {
    if (line.startsWith('\\ No newline at end of file (before)')) beforeHasNewline = false;
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (hunk) {
      const start = Number(hunk[1]) - (hunk[2] === '0' ? 0 : 1);
      if (start < at || start > b.length) return undefined;
      out.push(...b.slice(at, start));
      at = start;
      continue;
    }
    if (line.startsWith('---') || line.startsWith('+++') || line.startsWith('\\') || line === '') continue;
    const kind = line[0];
    const text = line.slice(1);
    if (kind === '+' || kind === ' ') {
      if (b[at] !== text) return undefined;
      at++;
      if (kind === ' ') out.push(text);
    } else if (kind === '-') out.push(text);
  }
  out.push(...b.slice(at));
  if (diff.startsWith('--- /dev/null')) return '';
  return out.length === 0 ? '' : `${out.join('\n')}${beforeHasNewline ? '\n' : ''}`;
}
