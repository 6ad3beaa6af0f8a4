import { StringDecoder } from 'node:string_decoder';
import { RequestError } from '@agentclientprotocol/sdk';
import type * as acp from '@agentclientprotocol/sdk';
import type { EngineHost } from '../engine';
import type { CommandResult } from '../workspace';

interface Terminal {
  line: string;
  controller: AbortController;
  output: string;
  truncated: boolean;
  limit: number;
  /** Output came through onOutput (else the result's is taken). */
  seen: boolean;
  result: Promise<CommandResult>;
  exit?: acp.TerminalExitStatus;
}

/**
 * An ACP agent's terminals (`terminal/*`): each one command line run by the session's Workspace
 * (its runner: the scrubbed environment, a process group, the time and output limits; in VS Code
 * the DeskRelay Agent terminal), after its approval. A stop kills them; release forgets them.
 */
export class Terminals {
  private readonly running = new Map<string, Terminal>();
  private next = 1;

  constructor(private readonly host: EngineHost) {}

  /** Starts `line`; `done` hears how it ended (for the card DeskRelay showed, when it asked). */
  start(line: string, stop: AbortSignal | undefined, outputByteLimit: number | undefined, done?: (ok: boolean, output: string) => void): string {
    const id = `t${this.next++}`;
    const controller = new AbortController();
    const limit = Math.min(outputByteLimit ?? this.host.limits.maxCommandOutputBytes, this.host.limits.maxCommandOutputBytes);
    const signal = stop ? AbortSignal.any([stop, controller.signal]) : controller.signal;
    const decoder = new StringDecoder('utf8');
    const t: Terminal = { line, controller, output: '', truncated: false, limit, seen: false, result: undefined as unknown as Promise<CommandResult> };
    t.result = this.host.workspace.runCommand(line, {
      signal,
      timeoutMs: this.host.limits.commandTimeoutMs,
      maxOutputBytes: this.host.limits.maxCommandOutputBytes,
      onOutput: (chunk) => {
        t.seen = true;
        // A character split across chunks stays whole.
        this.keep(t, decoder.write(chunk));
      },
    });
    void t.result.then(
      (r) => {
        // A host that does not stream the output (onOutput) still returns its end.
        if (!t.seen) this.keep(t, r.output);
        t.exit = { exitCode: r.exitCode, signal: r.exitCode === null ? (r.stopped || r.timedOut ? 'SIGKILL' : 'SIGTERM') : null };
        const how = r.stopped ? 'Stopped.' : r.timedOut ? `Timed out after ${this.host.limits.commandTimeoutMs / 1000} s.` : r.exitCode === null ? 'Ended by a signal.' : `Exit code ${r.exitCode}.`;
        done?.(r.exitCode === 0, `${how}\n${t.output === '' ? '(no output)' : t.output}`);
      },
      () => {
        t.exit = { exitCode: null, signal: 'SIGKILL' };
        done?.(false, 'The command could not run.');
      },
    );
    this.running.set(id, t);
    return id;
  }

  /** What a `terminal` content of a tool call shows: the command and its output so far. */
  shown(id: string): string {
    const t = this.running.get(id);
    return t ? `$ ${t.line}\n${t.output}` : `(terminal ${id})`;
  }

  output(id: string): acp.TerminalOutputResponse {
    const t = this.get(id);
    return { output: t.output, truncated: t.truncated, ...(t.exit ? { exitStatus: t.exit } : {}) };
  }

  async waitForExit(id: string): Promise<acp.WaitForTerminalExitResponse> {
    const t = this.get(id);
    await t.result.catch(() => {});
    return t.exit ?? { exitCode: null, signal: 'SIGKILL' };
  }

  kill(id: string): acp.KillTerminalResponse {
    this.get(id).controller.abort();
    return {};
  }

  release(id: string): acp.ReleaseTerminalResponse {
    this.get(id).controller.abort();
    this.running.delete(id);
    return {};
  }

  releaseAll(): void {
    for (const t of this.running.values()) t.controller.abort();
    this.running.clear();
  }

  private get(id: string): Terminal {
    const t = this.running.get(id);
    if (!t) throw new RequestError(-32002, `No terminal ${JSON.stringify(id)}: it was released or never made.`);
    return t;
  }

  /** Keeps the output's end within the limit, cut at a character boundary (ACP's rule). */
  private keep(t: Terminal, text: string): void {
    t.output += text;
    if (Buffer.byteLength(t.output) <= t.limit) return;
    const bytes = Buffer.from(t.output, 'utf8');
    let start = bytes.length - t.limit;
    while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
    t.output = bytes.subarray(start).toString('utf8');
    t.truncated = true;
  }
}
