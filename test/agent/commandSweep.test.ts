// No process an agent's command started outlives it: not one that left the process group
// (setsid), not a daemon (double fork into a new session), not one told to ignore hang-ups (nohup),
// whether the command ended by itself, by its time limit or by a stop. Linux only: elsewhere the
// runner kills the process group and the docs say what escapes.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runShellCommand } from '../../server/src/agent/hosts/node/command';
import { alive } from './support';

const folder = realpathSync(mkdtempSync(join(tmpdir(), 'deskrelay-sweep-')));
const started: number[] = [];
afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  rmSync(folder, { recursive: true, force: true });
});

/** A shell snippet that starts `sleep 300` the given way, the sleeper writing its own pid to `file`. */
const starters: Record<string, (file: string) => string> = {
  setsid: (file) => `setsid sh -c 'echo $$ > ${file}.tmp; mv ${file}.tmp ${file}; exec sleep 300' >/dev/null 2>&1 &`,
  'double fork into a new session': (file) => `(setsid sh -c '(sh -c "echo \\$\\$ > ${file}.tmp; mv ${file}.tmp ${file}; exec sleep 300" &) ' >/dev/null 2>&1 &)`,
  nohup: (file) => `nohup sh -c 'trap "" TERM; echo $$ > ${file}.tmp; mv ${file}.tmp ${file}; exec sleep 300' >/dev/null 2>&1 &`,
};

const waitForFile = (file: string) => `while [ ! -s ${file} ]; do sleep 0.05; done`;
const pidIn = (file: string) => Number(readFileSync(file, 'utf8').trim());

async function gone(pid: number): Promise<boolean> {
  // A signal lands when the process next runs: gone within moments, not at once.
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
  return !alive(pid);
}

let n = 0;
describe.runIf(process.platform === 'linux')('what a command started ends with it', () => {
  for (const [how, start] of Object.entries(starters)) {
    it(`${how}: after the command ends by itself`, async () => {
      const file = join(folder, `pid-${n++}`);
      const r = await runShellCommand(`${start(file)}\n${waitForFile(file)}; echo started`, folder, process.env, { signal: new AbortController().signal, timeoutMs: 20_000, maxOutputBytes: 4096 });
      expect(r.output).toContain('started');
      expect(r.exitCode).toBe(0);
      const pid = pidIn(file);
      started.push(pid);
      expect(await gone(pid)).toBe(true);
    });

    it(`${how}: after a stop`, async () => {
      const file = join(folder, `pid-${n++}`);
      const stop = new AbortController();
      const running = runShellCommand(`${start(file)}\n${waitForFile(file)}; sleep 60`, folder, process.env, { signal: stop.signal, timeoutMs: 60_000, maxOutputBytes: 4096 });
      for (let i = 0; i < 500 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
      const pid = pidIn(file);
      started.push(pid);
      stop.abort();
      expect((await running).stopped).toBe(true);
      expect(await gone(pid)).toBe(true);
    });
  }

  it('setsid: after the time limit', async () => {
    const file = join(folder, `pid-${n++}`);
    const r = await runShellCommand(`${starters.setsid!(file)}\n${waitForFile(file)}; sleep 60`, folder, process.env, { signal: new AbortController().signal, timeoutMs: 1500, maxOutputBytes: 4096 });
    expect(r.timedOut).toBe(true);
    const pid = pidIn(file);
    started.push(pid);
    expect(await gone(pid)).toBe(true);
  });

  it('leaves the user\'s other processes alone', async () => {
    const other = spawn('sleep', ['300'], { stdio: 'ignore' });
    other.on('error', () => {});
    started.push(other.pid!);
    const r = await runShellCommand('true', folder, process.env, { signal: new AbortController().signal, timeoutMs: 10_000, maxOutputBytes: 4096 });
    expect(r.exitCode).toBe(0);
    expect(alive(other.pid!)).toBe(true);
  });
});
