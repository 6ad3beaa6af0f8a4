import { spawn, type ChildProcess } from 'node:child_process';
import { CommandDeadline } from '../../commandDeadline';
import type { CommandOptions, CommandResult } from '../../workspace';
import { canSweep, RUN_VARIABLE, runMark, sweepMarked } from './sweep';

/** After SIGTERM, how long a command's processes get before SIGKILL. */
const KILL_GRACE_MS = 2000;
/** After the shell exits, how long its output may still drain before what it left behind is killed. */
const DRAIN_MS = 300;

/**
 * Runs one command line through the user's shell in `cwd`, in a process group of its own
 * (detached), so a stop, a timeout or the command's end can kill every process it started,
 * background ones included; on Linux each of its processes also carries a mark of this run in
 * its environment, and whatever left the group (setsid, a daemon) is found by it and killed
 * too, before the result is given. Output (stdout and stderr as they come) keeps its last
 * `maxOutputBytes`. Never rejects: a spawn failure is output and exit code 127.
 */
export function runShellCommand(command: string, cwd: string, env: NodeJS.ProcessEnv, options: CommandOptions): Promise<CommandResult> {
  const windows = process.platform === 'win32';
  const mark = canSweep() ? runMark() : undefined;
  if (mark) env = { ...env, [RUN_VARIABLE]: mark };
  return new Promise<CommandResult>((resolve) => {
    let chunks: Buffer[] = [];
    let held = 0;
    let dropped = 0;
    let settled = false;
    let child: ChildProcess;
    const keep = (chunk: Buffer) => {
      options.onOutput?.(chunk);
      chunks.push(chunk);
      held += chunk.length;
      while (held > options.maxOutputBytes && chunks.length > 0) {
        const over = held - options.maxOutputBytes;
        const first = chunks[0]!;
        if (first.length <= over) {
          chunks.shift();
          held -= first.length;
          dropped += first.length;
        } else {
          chunks[0] = first.subarray(over);
          held -= over;
          dropped += over;
        }
      }
    };
    try {
      child = windows
        ? spawn(command, { cwd, env, shell: true, windowsHide: true, stdio: ['ignore', 'pipe', 'pipe'] })
        : // stderr joins stdout in the shell, so the output keeps the order a terminal shows (two
          // pipes read separately can swap an error and the line before it).
          spawn('/bin/sh', ['-c', `exec 2>&1\n${command}`], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      resolve({ output: `The command could not start: ${(err as Error).message}`, exitCode: 127, timedOut: false, stopped: false, droppedBytes: 0 });
      return;
    }
    const killGroup = (signal: NodeJS.Signals) => {
      const pid = child.pid;
      if (pid === undefined) return;
      try {
        if (windows) spawn('taskkill', ['/pid', String(pid), '/T', '/F'], { windowsHide: true, stdio: 'ignore' }).on('error', () => {});
        else process.kill(-pid, signal);
      } catch {
        // The group is already gone.
      }
    };
    let killTimer: NodeJS.Timeout | undefined;
    const terminate = () => {
      killGroup('SIGTERM');
      killTimer ??= setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS);
    };
    const deadline = new CommandDeadline(options, terminate);

    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.stdout!.on('error', () => {});
    child.stderr!.on('error', () => {});
    let exitCode: number | null = null;
    let drainTimer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (settled) return;
      settled = true;
      deadline.clear();
      clearTimeout(drainTimer);
      // Whatever the command left running, in its group or out of it, ends with it.
      killGroup('SIGKILL');
      if (killTimer) clearTimeout(killTimer);
      const output = Buffer.concat(chunks).toString('utf8');
      chunks = [];
      const result = { output, exitCode, timedOut: deadline.timedOut, stopped: deadline.stopped, droppedBytes: dropped };
      if (mark) void sweepMarked(mark).then(() => resolve(result));
      else resolve(result);
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      keep(Buffer.from(`The command could not start: ${err.code ?? err.message}\n`));
      exitCode = 127;
      finish();
    });
    child.once('exit', (code) => {
      exitCode = code;
      // A background process may hold the pipes open: give the output a moment, then end.
      drainTimer = setTimeout(finish, DRAIN_MS);
    });
    child.once('close', finish);
  });
}
