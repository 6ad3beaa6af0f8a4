// docs/ is the interface reference: it names every error code and every /v1 path the relay
// has, and neither it nor the README points at files outside this repository.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, PATHS } from '../../server/src/protocol';

const root = resolve(__dirname, '../..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');
const docs = readdirSync(join(root, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => ({ file: `docs/${f}`, text: read(`docs/${f}`) }));
const allDocs = docs.map((d) => d.text).join('\n');
const serverSources = readdirSync(join(root, 'server/src'), { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => read(`server/src/${f}`))
  .join('\n');

describe('docs/', () => {
  it('documents every error code the relay can answer', () => {
    // The protocol's list (test/web/protocol.test.ts checks it against every HttpError the relay throws).
    const codes = Object.keys(ERROR_STATUS);
    expect(codes.length).toBeGreaterThan(10);
    for (const code of codes) expect(read('docs/http-api.md'), code).toContain(`\`${code}\``);
  });

  it('documents every /v1 path the relay serves', () => {
    // Route paths: `path: '/v1/…'` in a route, a `…_PATH = '/v1/…'` constant, or PATHS (every door's:
    // test/server/paths.test.ts); a path with parameters up to its first.
    const paths = new Set([
      ...[...serverSources.matchAll(/(?:path:\s*|_PATH\s*=\s*)['`](\/v1\/[a-z][a-z/]*)['`]/g)].map((m) => m[1]!),
      ...Object.values(PATHS).filter((p) => p.startsWith('/v1/')).map((p) => p.replace(/:.*$/, '')),
    ]);
    expect(paths.size).toBeGreaterThanOrEqual(7);
    expect(paths).toContain('/v1/chat/cancel');
    for (const path of paths) expect(allDocs, path).toContain(path);
  });

  it('links only to files that exist, never outside the repository', () => {
    for (const { file, text } of [...docs, { file: 'README.md', text: read('README.md') }]) {
      expect(text, file).not.toMatch(/\.\.\/shared|shared\/(SPEC|CONTRACT|DESIGN)\.md/);
      const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '.';
      for (const m of text.matchAll(/\]\(([^)#\s]+\.md)(#[^)]*)?\)/g)) {
        if (/^https?:/.test(m[1]!)) continue;
        expect(() => readFileSync(join(root, dir, m[1]!)), `${file} → ${m[1]}`).not.toThrow();
      }
    }
  });

  it('the README links to the reference', () => {
    expect(read('README.md')).toContain('](docs/README.md)');
  });
});
