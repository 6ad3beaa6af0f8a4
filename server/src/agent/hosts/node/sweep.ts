import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';

/**
 * The variable every process of one agent command carries: `DESK_AGENT_RUN=<random>`. A process
 * group is left by `setsid` (daemons double-fork into a session of their own), but the
 * environment is inherited across fork, exec, setsid and nohup alike, so after the command the
 * runner finds its leftovers by it. Chosen over a cgroup (needs systemd's delegation, absent in
 * containers and CI) and a child subreaper (prctl needs native code); what it cannot see: a
 * process that replaced its environment (`env -i`) or whose /proc/<pid>/environ the user may not
 * read (set-uid programs, and those that made themselves non-dumpable, as ssh-agent does).
 */
export const RUN_VARIABLE = 'DESK_AGENT_RUN';

/** A fresh mark for one command. */
export const runMark = () => randomBytes(16).toString('hex');

/** Whether this platform lets the runner read other processes' environments (Linux's /proc). */
export const canSweep = () => process.platform === 'linux';

/** Rounds of stopping before the kill: a process forking as fast as it can is caught by the next round. */
const MAX_ROUNDS = 20;
/**
 * Between rounds. A process in the middle of exec shows an empty environment for that moment
 * (seen: a daemon's `exec sleep` right as the command was stopped), so one empty round is not
 * proof; a second one a moment later is.
 */
const ROUND_GAP_MS = 25;

/**
 * Kills every process of the user's carrying `mark`, and returns how many. Each round SIGSTOPs
 * what it finds (a stopped process cannot fork again), until two rounds in a row find nothing
 * new; then SIGKILL for all. Never throws.
 */
export async function sweepMarked(mark: string): Promise<number> {
  if (!canSweep()) return 0;
  const needle = Buffer.from(`${RUN_VARIABLE}=${mark}\0`);
  const stopped = new Set<number>();
  let empty = 0;
  for (let round = 0; round < MAX_ROUNDS && empty < 2; round++) {
    if (round > 0) await new Promise((r) => setTimeout(r, ROUND_GAP_MS));
    const found = (await marked(needle)).filter((pid) => !stopped.has(pid));
    empty = found.length === 0 ? empty + 1 : 0;
    for (const pid of found) {
      signal(pid, 'SIGSTOP');
      stopped.add(pid);
    }
  }
  for (const pid of stopped) signal(pid, 'SIGKILL');
  return stopped.size;
}

async function marked(needle: Buffer): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return [];
  }
  const pids = names.filter((n) => /^\d+$/.test(n)).map(Number).filter((pid) => pid !== process.pid);
  const hits = await Promise.all(
    pids.map(async (pid) => {
      try {
        // Another user's process (or a non-dumpable one) is EACCES; one that ended meanwhile, ENOENT/ESRCH.
        return (await readFile(`/proc/${pid}/environ`)).includes(needle) ? pid : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  return hits.filter((pid): pid is number => pid !== undefined);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}
