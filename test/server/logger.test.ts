/**
 * The CLI's log (issue 28): lines logged in one turn of the event loop leave in one write, in the
 * order they were logged, each stamped when it was logged; and nothing logged just before the
 * process exits is lost, whether it exits on its own, by process.exit() or by an uncaught error.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { transformSync } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { consoleLogger } from '../../server/src/logger';

/** The logger module as plain JavaScript, for a child process to import. */
function loggerModule(): string {
  const source = readFileSync(new URL('../../server/src/logger.ts', import.meta.url), 'utf8');
  const file = join(mkdtempSync(join(tmpdir(), 'deskrelay-logger-')), 'logger.mjs');
  writeFileSync(file, transformSync(source, { loader: 'ts', format: 'esm' }).code);
  return file;
}

function recorder() {
  const writes: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      writes.push(String(chunk));
      done();
    },
  });
  return { stream, writes };
}

/** Runs a script with the real logger on the child's stderr (a pipe here, as under a service manager). */
function child(body: string) {
  const script = `import { consoleLogger } from ${JSON.stringify(loggerModule())};\nconst log = consoleLogger(process.stderr);\n${body}`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
}

describe('consoleLogger', () => {
  it('writes the lines of one turn of the event loop together, in order, each with its own level', async () => {
    const { stream, writes } = recorder();
    const log = consoleLogger(stream);
    log.info('GET /v1/health 200 1ms');
    log.warn('config reloaded');
    log.error('provider down');
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(writes).toHaveLength(1);
    const lines = writes[0]!.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => l.replace(/^\S+ /, ''))).toEqual(['info GET /v1/health 200 1ms', 'warn config reloaded', 'error provider down']);
    for (const l of lines) expect(Number.isNaN(Date.parse(l.split(' ')[0]!))).toBe(false);
    log.info('next turn');
    await new Promise((r) => setImmediate(r));
    expect(writes).toHaveLength(2);
    expect(writes[1]).toMatch(/^\S+ info next turn\n$/);
  });

  it('stamps each line with the time it was logged, to the millisecond, also within one turn', async () => {
    const { stream, writes } = recorder();
    const log = consoleLogger(stream);
    const at = (iso: string) => {
      const t = Date.parse(iso);
      const real = Date.now;
      Date.now = () => t;
      return () => (Date.now = real);
    };
    for (const [iso, message] of [
      ['2026-11-27T10:00:00.001Z', 'a'],
      ['2026-11-27T10:00:00.001Z', 'b'],
      ['2026-11-27T10:00:00.002Z', 'c'],
      ['2026-11-27T10:00:01.002Z', 'd'],
    ]) {
      const restore = at(iso);
      try {
        log.info(message);
      } finally {
        restore();
      }
    }
    await new Promise((r) => setImmediate(r));
    expect(writes.join('')).toBe(
      '2026-11-27T10:00:00.001Z info a\n2026-11-27T10:00:00.001Z info b\n2026-11-27T10:00:00.002Z info c\n2026-11-27T10:00:01.002Z info d\n',
    );
  });

  it('writes what was logged just before process.exit()', () => {
    const r = child(`log.info('one'); log.error('two, then exit'); process.exit(3);`);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/info one\n\S+ error two, then exit\n$/);
  });

  it('writes what was logged just before an uncaught error ends the process', () => {
    const r = child(`log.error('about to fail'); throw new Error('boom');`);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('error about to fail\n');
    expect(r.stderr).toContain('boom');
  });
});
