// The diff an approval shows must be the change that will be applied: checked by applying it
// with git's own patch machinery to the old text and getting the new text back.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reverseDiff, unifiedDiff } from '../../server/src/agent/changes';

const dir = mkdtempSync(join(tmpdir(), 'deskrelay-diff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Applies `diff` to `before` with `git apply` (strict: context must match) and returns the result. */
function applyWithGit(before: string | undefined, diff: string): string {
  rmSync(join(dir, 'f'), { force: true });
  if (before !== undefined) writeFileSync(join(dir, 'f'), before);
  writeFileSync(join(dir, 'p.diff'), diff);
  execFileSync('git', ['apply', '--unsafe-paths', `--directory=`, 'p.diff'], { cwd: dir, stdio: 'pipe' });
  return readFileSync(join(dir, 'f'), 'utf8');
}

let seed = 7;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const lines = (n: number) => Array.from({ length: n }, () => `line ${Math.floor(random() * 6)}`).join('\n') + '\n';

describe('unifiedDiff', () => {
  it('shows a one-line change with three lines of context', () => {
    const before = 'a\nb\nc\nd\ne\nf\ng\nh\n';
    const after = 'a\nb\nc\nd\nE\nf\ng\nh\n';
    expect(unifiedDiff('src/x.ts', before, after)).toBe('--- a/src/x.ts\n+++ b/src/x.ts\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n');
  });

  it('a new file is a diff from /dev/null; equal texts give nothing', () => {
    expect(unifiedDiff('n.txt', undefined, 'x\ny\n')).toBe('--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n');
    expect(unifiedDiff('n.txt', 'same\n', 'same\n')).toBe('');
  });

  it('applies cleanly with git apply and gives the new text, for 300 random edits', () => {
    for (let t = 0; t < 300; t++) {
      const before = lines(Math.floor(random() * 40));
      const after = lines(Math.floor(random() * 40));
      const diff = unifiedDiff('f', before, after);
      if (before === after) continue;
      expect(applyWithGit(before, diff), diff).toBe(after);
    }
  });

  it('reverseDiff gives the text before from the text after, for 2000 random edits (the desk\'s diff editor)', () => {
    for (let t = 0; t < 2000; t++) {
      const before = t % 7 === 0 ? undefined : lines(Math.floor(random() * 40));
      const after = lines(Math.floor(random() * 40));
      const diff = unifiedDiff('f', before, after);
      if (before === after) continue;
      expect(reverseDiff(diff, after), diff).toBe(before ?? '');
    }
    // A file changed after the edit: not guessed.
    const diff = unifiedDiff('f', 'a\nb\nc\n', 'a\nB\nc\n');
    expect(reverseDiff(diff, 'a\nX\nc\n')).toBeUndefined();
  });
});
