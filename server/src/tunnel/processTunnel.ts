import { AgentTunnel, stoppedError } from './base';
import { agentEnv, passedNames } from './env';
import { TunnelError, withLastLines } from './errors';
import { redact } from './find';
import { AgentProcess, type Exit } from './process';
import type { TunnelOptions } from './tunnel';

export interface ProcessTunnelOptions extends TunnelOptions {
  /** The agent's program, from its find…() function. */
  binary: string;
}

/** What waitForAgent() waits for; `match` reads each line until it returns something. */
export interface AgentWait<T> {
  limitMs: number;
  match: (line: string) => T | undefined;
  /** Ends "<agent> exited with code 1 …" when the agent exits first, e.g. 'before it printed a tunnel URL.' */
  exitWhen: string;
  /** The message when `limitMs` runs out (the last lines are appended). */
  timeout: string;
}

/**
 * An agent that runs as one long-lived process of ours (cloudflared, ngrok), as opposed to one
 * that hands the serving to a daemon (tailscale). The process, its temp files, its exit and the
 * wait for its first sign of life are the same for each; the agent says what its lines mean.
 */
export abstract class ProcessTunnel extends AgentTunnel {
  protected readonly binary: string;
  protected proc?: AgentProcess;
  /** Removed with the process, also when it dies on its own. */
  protected tempFiles?: { remove(): void };

  protected constructor(agent: string, opts: ProcessTunnelOptions) {
    super(agent, opts);
    this.binary = opts.binary;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /** A line of the current process (already redacted); earlier runs' late lines never get here. */
  protected abstract onLine(proc: AgentProcess, line: string): void;
  /** After "<agent> exited …; the tunnel <url> ": what that means for the user, e.g. 'is down. Restart the tunnel…'. */
  protected abstract exitedAfterUp(): string;

  /**
   * Starts the agent with an allow-listed environment (env.ts) plus `set`. `secrets` are blanked
   * out of its lines before anything (last lines, logs, errors) keeps them.
   */
  protected spawnAgent(args: string[], set: Record<string, string> = {}, secrets: readonly string[] = []): AgentProcess {
    const source = this.opts.env ?? process.env;
    const passed = passedNames(source);
    if (passed.length > 0) this.logger.info(`${this.agent} also gets ${passed.join(', ')} (DESKRELAY_TUNNEL_PASS_ENV)`);
    const proc = new AgentProcess(this.binary, args, { env: agentEnv(source, { set }), graceMs: this.opts.stopGraceMs });
    this.proc = proc;
    proc.on('line', (line: string) => {
      if (proc === this.proc) this.onLine(proc, redact(line, secrets));
    });
    proc.on('exit', (exit: Exit) => this.onExit(proc, exit));
    return proc;
  }

  /** Resolves with the first `match` of the agent's raw lines; rejects on exit, stop() or `limitMs`. */
  protected waitForAgent<T>(proc: AgentProcess, signal: AbortSignal, wait: AgentWait<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        proc.off('line', onLine);
        proc.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const onLine = (line: string) => {
        const found = wait.match(line);
        if (found === undefined) return;
        cleanup();
        resolve(found);
      };
      const onExit = (exit: Exit) => {
        cleanup();
        reject(this.exitError(exit, wait.exitWhen));
      };
      const onAbort = () => {
        cleanup();
        reject(stoppedError());
      };
      const timer = setTimeout(() => {
        cleanup();
        const lines = this.last.get();
        reject(new TunnelError(withLastLines(`${wait.timeout} within ${Math.round(wait.limitMs / 1000)} s.`, lines, this.agent), lines));
      }, wait.limitMs);
      proc.on('line', onLine);
      proc.on('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      if (proc.exit) onExit(proc.exit);
    });
  }

  /** The agent printed its public `url`: shown at once (log, progress, the 'url' event), then waited for until it answers through the tunnel. */
  protected async opened(proc: AgentProcess, url: string, signal: AbortSignal, hint: string): Promise<string> {
    this.logger.info(`${this.agent} opened ${url}; waiting for it to answer`);
    this.announce(url);
    this.progress(`${this.agent} opened ${url}; waiting for the tunnel to answer…`);
    await this.waitForProcessAnswer(proc, url, signal, hint);
    return url;
  }

  /** waitForAnswer() that fails at once, with the agent's last lines, when the agent exits meanwhile. */
  protected async waitForProcessAnswer(proc: AgentProcess, url: string, signal: AbortSignal, hint: string): Promise<void> {
    const died = proc.done.then((exit): never => {
      throw this.exitError(exit, `while waiting for ${url} to answer.`);
    });
    await this.waitForAnswer(url, died, signal, hint);
  }

  protected async close(): Promise<void> {
    const proc = this.proc;
    const files = this.tempFiles;
    this.proc = undefined;
    this.tempFiles = undefined;
    try {
      if (proc) await proc.stop();
    } finally {
      files?.remove();
    }
  }

  protected closeSync(): void {
    this.proc?.killSync();
    this.tempFiles?.remove();
  }

  private onExit(proc: AgentProcess, exit: Exit): void {
    // While starting, start() reports the exit; on stop(), close() has already let go of proc.
    if (proc !== this.proc || this.state === 'starting') return;
    const url = this.url;
    this.proc = undefined;
    this.tempFiles?.remove();
    this.tempFiles = undefined;
    this.gone(withLastLines(`${this.describeExit(exit)}; the tunnel ${url ?? ''} ${this.exitedAfterUp()}`, this.last.get(), this.agent));
  }

  protected exitError(exit: Exit, when: string): TunnelError {
    const lines = this.last.get();
    if (exit.spawnError) return new TunnelError(`Could not start ${this.agent} at ${this.binary}: ${exit.spawnError.message}`, lines);
    return new TunnelError(withLastLines(`${this.describeExit(exit)} ${when}`, lines, this.agent), lines);
  }

  private describeExit(exit: Exit): string {
    if (exit.spawnError) return `${this.agent} could not be started (${exit.spawnError.message})`;
    if (exit.signal) return `${this.agent} was killed (${exit.signal})`;
    return `${this.agent} exited with code ${exit.code ?? 'unknown'}`;
  }
}
