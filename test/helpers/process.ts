import { readFileSync } from 'node:fs';

/**
 * True while the process exists and has not died. A killed background child is re-parented to
 * PID 1, and a container's PID 1 may never reap it: a zombie answers kill(pid, 0) but is dead.
 * (Imported by the real-VS-Code suite too: nothing of vitest here.)
 */
export function alive(pid: number): boolean {
  // 0 or NaN (a pid file read while it was being written) would signal our own group.
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`not a process id: ${pid}`);
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
