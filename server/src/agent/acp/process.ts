import { spawn, type ChildProcess } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { ndJsonStream, type Stream } from '@agentclientprotocol/sdk';
import { redactSecrets } from '../../redact';

/** How an ACP agent is started: a program and its arguments, plus variables of its own. */
export interface AcpCommand {
  command: string;
  args: readonly string[];
  env: Readonly<Record<string, string>>;
}

/** The stderr kept for a crash's message: its last lines, at most this many bytes. */
const TAIL_BYTES = 4096;
const TAIL_LINES = 8;
/** After the agent exits, how long its stderr may still drain before the exit is told. */
const EXIT_DRAIN_MS = 1000;
/** After SIGTERM to the group, how long before SIGKILL. */
const KILL_GRACE_MS = 2000;
/**
 * When the session or the relay ends: how long an agent has, after its input ends, to save what
 * it keeps and exit on its own (Claude Code writes its session file after its turn has ended,
 * and a SIGTERM at once lost it) before it is sent SIGTERM.
 */
const STOP_GRACE_MS = 1500;

/**
 * Anything that looks like a credential, taken out of an agent's stderr before it is shown:
 * `Bearer …`, `key=…`-style assignments, `sk-…`/`ghp_…`-style keys and long unbroken runs of
 * token characters (a JWT, a hex or base64 secret). Paths and words stay readable.
 */
const TOKENISH = [
  /\b(bearer|basic)\s+[^\s"']+/gi,
  /\b([a-z0-9_.-]*(?:api[_-]?key|token|secret|password|passwd|authorization|credential)s?)(["']?\s*[:=]\s*["']?)[^\s"',}]+/gi,
  /\b(?:sk|pk|rk|ghp|gho|ghs|github_pat|xox[abp]|AIza|ya29)[-_][A-Za-z0-9_-]{8,}/g,
  /[A-Za-z0-9+/_=-]{32,}/g,
];

export function redactTokens(text: string, secrets: readonly string[] = []): string {
  let out = redactSecrets(text, secrets);
  out = out.replace(TOKENISH[0]!, (_m, scheme: string) => `${scheme} [redacted]`);
  out = out.replace(TOKENISH[1]!, (_m, name: string, sep: string) => `${name}${sep}[redacted]`);
  out = out.replace(TOKENISH[2]!, '[redacted]');
  return out.replace(TOKENISH[3]!, (m) => (/[0-9]/.test(m) && /[A-Za-z]/.test(m) ? '[redacted]' : m));
}

/** A running ACP agent: its JSON-RPC stream, its stderr's tail, and how to end it with its whole process group. */
export class AgentProcess {
  readonly child: ChildProcess;
  readonly stream: Stream;
  /** Settles when the process has ended (or could not start), with how. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: string }>;
  private tail = '';
  private killed = false;

  constructor(private readonly spec: AcpCommand, cwd: string, baseEnv: NodeJS.ProcessEnv) {
    const windows = process.platform === 'win32';
    // Its own process group (detached): a stop or a close ends what it started too.
    this.child = spawn(spec.command, [...spec.args], { cwd, env: { ...baseEnv, ...spec.env }, stdio: ['pipe', 'pipe', 'pipe'], detached: !windows, windowsHide: true });
    this.exited = new Promise((resolve) => {
      this.child.once('error', (err: NodeJS.ErrnoException) => resolve({ code: null, signal: null, error: err.code === 'ENOENT' ? `${spec.command} was not found` : `${spec.command} could not start (${err.code ?? err.message})` }));
      // `close` comes once its pipes ended too, so the stderr tail is whole; a process it left
      // behind holding them open delays that, so `exit` settles it after a short wait anyway.
      this.child.once('close', (code, signal) => resolve({ code, signal }));
      this.child.once('exit', (code, signal) => setTimeout(() => resolve({ code, signal }), EXIT_DRAIN_MS).unref());
    });
    for (const pipe of [this.child.stdin, this.child.stdout, this.child.stderr]) pipe?.on('error', () => {});
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.tail = (this.tail + chunk.toString('utf8')).slice(-TAIL_BYTES);
    });
    this.stream = ndJsonStream(Writable.toWeb(this.child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(this.child.stdout!) as ReadableStream<Uint8Array>);
  }

  /** How it ended, if it ends within `ms` (a closed connection is told before the exit is). */
  async endedWithin(ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: string } | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Why it could not be started or ended at start, for a message: how it ended and its last words. */
  startFailure(how: { code: number | null; signal: NodeJS.Signals | null; error?: string }): string {
    if (how.error) return how.error;
    const tail = this.stderrTail();
    return `it exited at start (${how.signal ?? `exit code ${how.code}`})${tail ? `: ${tail}` : ''}`;
  }

  get ended(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** True once kill() or stop() was called: an exit then is not a crash. */
  get wasKilled(): boolean {
    return this.killed;
  }

  /** The last lines the agent wrote to stderr, with anything token-like taken out. */
  stderrTail(): string {
    const lines = this.tail.split(/\r?\n/).map((l) => l.trimEnd()).filter((l) => l !== '');
    return redactTokens(lines.slice(-TAIL_LINES).join('\n'), Object.values(this.spec.env));
  }

  /** Ends the agent and every process it started: SIGTERM to its group, SIGKILL after a grace. */
  kill(): void {
    if (this.killed) return;
    this.killed = true;
    this.terminate();
  }

  /**
   * Ends the agent kindly, and resolves once it has exited: its input ends first (an agent may
   * save what it keeps and exit on its own), then after `graceMs` it is killed as by kill().
   * What awaits this (the relay stopping) leaves no agent behind, even one that ignores SIGTERM:
   * kill()'s SIGKILL timer alone would die with a process that exits next.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    if (!this.killed && this.child.pid !== undefined && !this.ended) {
      this.killed = true;
      this.child.stdin?.end();
      await this.endedWithin(graceMs);
      this.terminate();
    } else {
      this.kill();
    }
    await this.endedWithin(KILL_GRACE_MS + EXIT_DRAIN_MS);
  }

  /** SIGTERM to the group (SIGKILL after KILL_GRACE_MS); once the agent exited, SIGKILL to what it left in its group. */
  private terminate(): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    const signal = (s: NodeJS.Signals) => {
      try {
        if (process.platform === 'win32') this.child.kill(s);
        else process.kill(-pid, s);
      } catch {
        // already gone
      }
    };
    if (this.ended) {
      // It exited already (on its own, after its input ended): what it left in its group goes.
      signal('SIGKILL');
      return;
    }
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), KILL_GRACE_MS);
    timer.unref();
    void this.exited.then(() => {
      clearTimeout(timer);
      // What it left behind in its group goes too.
      signal('SIGKILL');
    });
  }
}
