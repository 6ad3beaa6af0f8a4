import { spawn, spawnSync } from 'node:child_process';
import { LineSplitter } from './lines';

/** One short-lived run of an agent's CLI (`tailscale funnel --bg …`, `… status --json`). */
export interface CommandResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  /** Every line it printed on stdout and stderr, in order (ANSI codes removed). */
  lines: string[];
  stderrLines: string[];
  /** ENOENT, EACCES… when it could not start; 'timeout' when it ran past its limit. */
  error?: string;
}

export interface CommandOptions {
  /** The allow-listed environment (env.ts), passed as is. */
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Each line as it comes (a CLI that waits for the user prints why). */
  onLine?: (line: string) => void;
}

export function runCommand(binary: string, args: string[], opts: CommandOptions): Promise<CommandResult> {
  return new Promise((resolve) => {
    const lines: string[] = [];
    const stderrLines: string[] = [];
    let stdout = '';
    let error: string | undefined;
    let child;
    try {
      child = spawn(binary, args, {
        env: opts.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
        shell: process.platform === 'win32' && /\.(cmd|bat)$/i.test(binary),
      });
    } catch (err) {
      resolve({ code: null, signal: null, stdout, lines, stderrLines, error: (err as Error).message });
      return;
    }
    const take = (splitter: LineSplitter, chunk: string, stderr: boolean) => {
      for (const line of splitter.push(chunk)) {
        lines.push(line);
        if (stderr) stderrLines.push(line);
        opts.onLine?.(line);
      }
    };
    const out = new LineSplitter();
    const err = new LineSplitter();
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      take(out, c, false);
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => take(err, c, true));
    // A pipe error unheard would end the relay; the exit code and the lines already in say enough.
    child.stdout.on('error', () => {});
    child.stderr.on('error', () => {});
    const kill = (why: string) => {
      error ??= why;
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 2000).unref();
    };
    const timer = setTimeout(() => kill('timeout'), opts.timeoutMs);
    const onAbort = () => kill('aborted');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();
    child.on('error', (e: NodeJS.ErrnoException) => {
      error ??= e.code ?? e.message;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      for (const line of out.flush()) lines.push(line);
      for (const line of err.flush()) {
        lines.push(line);
        stderrLines.push(line);
      }
      resolve({ code, signal, stdout, lines, stderrLines, error });
    });
  });
}

/** The same, synchronously, for process exit (undoing what an agent set up). */
export function runCommandSync(binary: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): number | null {
  try {
    return spawnSync(binary, args, { env, stdio: 'ignore', timeout: timeoutMs, windowsHide: true }).status;
  } catch {
    return null;
  }
}
