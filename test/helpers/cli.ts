/** The built CLI (dist/cli.js) in child processes, as a user runs it: its output collected, and killed after each test of a suite. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterEach, beforeAll } from 'vitest';

export const CLI = resolve(__dirname, '../../dist/cli.js');

export interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Its exit code (null: ended by a signal). */
  exited: Promise<number | null>;
}

const running: ChildProcess[] = [];

/**
 * For a suite of CLI tests: fails at once when dist/cli.js is not built, and after each test kills
 * every CLI it left running, then runs `cleanup` (what the CLIs used, such as their folders).
 */
export function cliSuite(cleanup?: () => void): void {
  beforeAll(() => {
    if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run "node scripts/build.mjs" first (npm test does)');
  });
  afterEach(() => {
    for (const c of running.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
    cleanup?.();
  });
}

/** `node [...nodeArgs] dist/cli.js ...args` with exactly `env`. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv, nodeArgs: string[] = []): CliRun {
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}
