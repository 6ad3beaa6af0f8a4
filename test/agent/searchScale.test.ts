// The CLI's plain search on a tree larger than one batch of its file reader (issue 28): the files
// are read a batch ahead on a worker thread and a regular expression runs over many files at
// once, and none of that may change an answer. Every search here is checked against a reference
// written the simplest way (list the files, read each, test each line), on a tree with what the
// search must skip: binary files, files over 2 MiB, an ignored folder, denied files, matches
// past a line's first 10,000 characters, and replies the reader must split (files of 1.5 MiB).
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeWorkspace } from '../../server/src/agent/hosts/node';
import type { SearchResult } from '../../server/src/agent/workspace';

let repo: string;
let ws: NodeWorkspace;

beforeAll(() => {
  repo = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-search-scale-')));
  writeFileSync(join(repo, '.gitignore'), 'vendor/\n');
  for (let d = 0; d < 6; d++) {
    const dir = join(repo, 'src', `d${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 60; f++) {
      const n = d * 60 + f;
      const lines = Array.from({ length: 80 }, (_, i) => `  const v${i} = ${n} * ${i}; // filler text for the search to go through`);
      if (n % 7 === 0) lines[n % 80] = `  const hit = 'needle ${n}';`;
      if (n % 11 === 0) lines[3] = `  const crlf = 'needle crlf ${n}';\r`;
      writeFileSync(join(dir, `f${String(f).padStart(2, '0')}.ts`), `${lines.join('\n')}\n`);
    }
  }
  // Skipped: binary (a NUL early), over 2 MiB, ignored, denied; not reported: past 10,000 characters.
  writeFileSync(join(repo, 'src', 'd0', 'blob.bin'), Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from('needle in a binary\n')]));
  writeFileSync(join(repo, 'src', 'd1', 'huge.txt'), `needle at the top of a huge file\n${'x'.repeat(2.5 * 1024 * 1024)}\n`);
  mkdirSync(join(repo, 'vendor'));
  writeFileSync(join(repo, 'vendor', 'lib.js'), 'needle in an ignored folder\n');
  writeFileSync(join(repo, 'src', 'd2', '.env'), 'needle=secret\n');
  writeFileSync(join(repo, 'src', 'd3', 'minified.js'), `${'y'.repeat(10_050)} needle far out\nneedle near\n`);
  // Large files with matches: more than one reply of the reader's 8 MiB.
  mkdirSync(join(repo, 'big'));
  for (let i = 0; i < 9; i++) writeFileSync(join(repo, 'big', `b${i}.txt`), `${`${'z'.repeat(99)}\n`.repeat(15_000)}needle in big ${i}\n`);
  ws = new NodeWorkspace({ folder: repo, configDir: join(repo, '.no-config') });
});
afterAll(() => rmSync(repo, { recursive: true, force: true }));

/** The search the simple way: every listed file read whole, every line tested. */
async function reference(test: (line: string) => boolean, maxMatches: number): Promise<SearchResult> {
  const { files } = await ws.listFiles({ path: '', maxEntries: 100_000 });
  const matches: SearchResult['matches'] = [];
  for (const file of files) {
    const bytes = readFileSync(join(repo, file));
    if (bytes.length > 2 * 1024 * 1024 || bytes.subarray(0, 8192).includes(0)) continue;
    const lines = bytes.toString('utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!test(lines[i]!.slice(0, 10_000))) continue;
      if (matches.length >= maxMatches) return { matches, truncated: true };
      const line = lines[i]!;
      matches.push({ path: file, line: i + 1, text: line.length > 300 ? `${line.slice(0, 300)}…` : line.replace(/\r$/, '') });
    }
  }
  return { matches, truncated: false };
}

describe('the plain search at scale', () => {
  it('finds what the simple reference finds, in the same order, plain and regular expression', async () => {
    const plain = await ws.search({ query: 'needle', regex: false, maxMatches: 1000 });
    expect(plain).toEqual(await reference((l) => l.includes('needle'), 1000));
    expect(plain.matches.length).toBeGreaterThan(80);
    expect(plain.matches.filter((m) => m.path.startsWith('big/'))).toHaveLength(9);
    expect(plain.matches.map((m) => m.path)).not.toContain('vendor/lib.js');
    expect(plain.matches.some((m) => m.text.includes('far out'))).toBe(false);
    const re = /needle (crlf )?\d+/;
    expect(await ws.search({ query: re.source, regex: true, maxMatches: 1000 })).toEqual(await reference((l) => re.test(l), 1000));
  });

  it('stops at the cap wherever it falls, with the same first matches', async () => {
    for (const cap of [1, 37, 95]) {
      expect(await ws.search({ query: 'needle', regex: false, maxMatches: cap })).toEqual(await reference((l) => l.includes('needle'), cap));
      expect(await ws.search({ query: 'need[l]e', regex: true, maxMatches: cap })).toEqual(await reference((l) => /need[l]e/.test(l), cap));
    }
  });

  it('a query with no match anywhere: nothing, not truncated', async () => {
    expect(await ws.search({ query: 'absent-everywhere', regex: false, maxMatches: 10 })).toEqual({ matches: [], truncated: false });
  });
});
