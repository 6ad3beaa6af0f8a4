import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { LineSplitter } from './lines';
import { WATCHDOG_SOURCE, type WatchdogConfig, type WatchdogMessage } from './watchdog';

export interface Exit {
  code: number | null;
  signal: string | null;
  /** Set when the agent could not be started at all (ENOENT, EACCES…). */
  spawnError?: { code?: string; message: string };
}

export interface AgentProcessOptions {
  /** The agent's whole environment, already allow-listed (env.ts): passed on as given. */
  env?: NodeJS.ProcessEnv;
  /** SIGTERM → SIGKILL delay. cloudflared, for one, waits up to its own 30 s grace period for requests in flight. */
  graceMs?: number;
}

/** Processes still running, for `stopAllTunnelsSync` on process exit. */
const live = new Set<AgentProcess>();

/**
 * One run of a tunnel agent (cloudflared, …) behind the watchdog. Emits `line` (each stdout/stderr line), `spawned`
 * (pid) and `exit` (Exit) once, after every line it printed has been emitted.
 */
export class AgentProcess extends EventEmitter {
  private readonly watchdog: ChildProcess;
  private agentPid?: number;
  private exitInfo?: Exit;
  private readonly exited: Promise<Exit>;
  private readonly graceMs: number;

  constructor(binary: string, args: string[], opts: AgentProcessOptions = {}) {
    super();
    this.graceMs = opts.graceMs ?? 3000;
    const env = { ...(opts.env ?? process.env) };
    // The watchdog is Node: inside the editor process.execPath is Electron, which only acts as
    // Node with ELECTRON_RUN_AS_NODE; NODE_OPTIONS could load the host's preloads into it. Both
    // are put back as they were for the agent (an allow-listed env has neither).
    const restoreEnv: Record<string, string | null> = {
      ELECTRON_RUN_AS_NODE: env.ELECTRON_RUN_AS_NODE ?? null,
      NODE_OPTIONS: env.NODE_OPTIONS ?? null,
    };
    env.ELECTRON_RUN_AS_NODE = '1';
    delete env.NODE_OPTIONS;
    const config: WatchdogConfig = {
      binary,
      args,
      graceMs: this.graceMs,
      shell: process.platform === 'win32' && /\.(cmd|bat)$/i.test(binary),
      restoreEnv,
    };
    this.watchdog = spawn(process.execPath, ['-e', WATCHDOG_SOURCE, JSON.stringify(config)], {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      env,
      // Own process group: a Ctrl+C in the CLI's terminal reaches the CLI, which stops the
      // tunnel in order, instead of killing the agent behind its back (reported as a crash).
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
    live.add(this);

    let message: WatchdogMessage | undefined;
    const control = new LineSplitter();
    const controlPipe = this.watchdog.stdio[3] as Readable;
    // A pipe error would be an uncaught exception in the relay; the exit report says what happened.
    controlPipe.on('error', () => {});
    controlPipe.on('data', (chunk: Buffer) => {
      for (const line of control.push(chunk.toString())) {
        try {
          message = JSON.parse(line) as WatchdogMessage;
        } catch {
          continue;
        }
        if (message.type === 'spawned') {
          this.agentPid = message.pid;
          this.emit('spawned', message.pid);
        } else if (message.type === 'error') {
          this.exitInfo = { code: null, signal: null, spawnError: { code: message.code, message: message.message } };
        } else {
          this.exitInfo = { code: message.code, signal: message.signal };
        }
      }
    });
    this.readLines(this.watchdog.stdout!);
    this.readLines(this.watchdog.stderr!);
    this.watchdog.stdin!.on('error', () => {}); // EPIPE once the watchdog is gone

    this.exited = new Promise((resolve) => {
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        live.delete(this);
        // No exit report: the watchdog itself died (killed from outside); say what we know.
        const exit = this.exitInfo ?? { code, signal };
        this.exitInfo = exit;
        this.emit('exit', exit);
        resolve(exit);
      };
      // 'close' waits for every stdio stream to end, so all of the agent's lines are in.
      this.watchdog.on('close', finish);
      // The watchdog only exits after the agent did; gone without saying so, it was killed
      // from outside and the agent may still hold our pipes: kill it ourselves.
      this.watchdog.on('exit', () => {
        if (!this.exitInfo) this.killSync();
      });
      this.watchdog.on('error', (err) => {
        this.exitInfo ??= { code: null, signal: null, spawnError: { message: `could not start the watchdog: ${err.message}` } };
        finish(null, null);
      });
    });
  }

  private readLines(stream: Readable): void {
    const splitter = new LineSplitter();
    stream.setEncoding('utf8');
    stream.on('error', () => {});
    stream.on('data', (chunk: string) => {
      for (const line of splitter.push(chunk)) this.emit('line', line);
    });
    stream.on('end', () => {
      for (const line of splitter.flush()) this.emit('line', line);
    });
  }

  /** The agent's own pid, once started. */
  get pid(): number | undefined {
    return this.agentPid;
  }

  get watchdogPid(): number | undefined {
    return this.watchdog.pid;
  }

  get exit(): Exit | undefined {
    return this.exitInfo;
  }

  get done(): Promise<Exit> {
    return this.exited;
  }

  /** Stops the agent (SIGTERM, SIGKILL after the grace period) and waits until it is gone. */
  async stop(): Promise<Exit> {
    if (!live.has(this)) return this.exited;
    this.watchdog.stdin!.end();
    // Belt and braces: if the watchdog itself is stuck, kill both directly.
    const fallback = setTimeout(() => this.killSync(), this.graceMs + 2000);
    try {
      return await this.exited;
    } finally {
      clearTimeout(fallback);
    }
  }

  /** Synchronous, for process exit handlers: SIGKILL the agent and its watchdog. */
  killSync(): void {
    for (const pid of [this.agentPid, this.watchdog.pid]) {
      if (pid === undefined) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/** Kills every agent this process started. Safe to register on `process.on('exit')`. */
export function killAllAgentsSync(): void {
  for (const p of live) p.killSync();
}
