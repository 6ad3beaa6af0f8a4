/**
 * A test relay in a Node process of its own (for what is read once per process, such as
 * NODE_EXTRA_CA_CERTS, or memory figures free of the test runner's). The child's entry is bundled
 * from source with esbuild, so it is always the code under test; it answers in stdout lines and
 * takes commands on stdin (relayChildCommands.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface BundledChild {
  child: ChildProcess;
  /** The child's next stdout line (lines not yet asked for are kept in order). */
  nextLine(timeoutMs: number, timedOut: () => Error): Promise<string>;
  /** Writes one command line to the child's stdin. */
  send(command: string): void;
  /** Ends stdin and SIGTERMs the child (SIGKILL after 5 s), waits for it, removes the bundle. */
  stop(): Promise<void>;
}

export async function spawnBundledChild(opts: {
  entry: string;
  /** Handed to the child as argv[2], as JSON. */
  arg: unknown;
  /** Names the temp dir the bundle goes to. */
  bundlePrefix: string;
  nodeArgs?: string[];
  env?: NodeJS.ProcessEnv;
  stderr: 'pipe' | 'inherit';
}): Promise<BundledChild> {
  const { build } = await import('esbuild');
  const dir = mkdtempSync(join(tmpdir(), opts.bundlePrefix));
  const outfile = join(dir, 'relayChild.js');
  await build({ entryPoints: [opts.entry], outfile, bundle: true, platform: 'node', target: 'node20', format: 'cjs', logLevel: 'error' });
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), outfile, JSON.stringify(opts.arg)], { stdio: ['pipe', 'pipe', opts.stderr], env: opts.env });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const queued: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    let nl: number;
    while ((nl = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      const w = waiting.shift();
      if (w) w(line);
      else queued.push(line);
    }
  });
  return {
    child,
    nextLine: (timeoutMs, timedOut) =>
      new Promise<string>((resolve, reject) => {
        const q = queued.shift();
        if (q !== undefined) return resolve(q);
        const timer = setTimeout(() => reject(timedOut()), timeoutMs);
        waiting.push((line) => {
          clearTimeout(timer);
          resolve(line);
        });
      }),
    send: (command) => void child.stdin!.write(`${command}\n`),
    async stop() {
      child.stdin!.end();
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
