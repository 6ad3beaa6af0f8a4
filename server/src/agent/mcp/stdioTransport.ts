import { spawn, type ChildProcess } from 'node:child_process';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * The MCP stdio transport, ours rather than the SDK's so the server runs as a command does: in a
 * process group of its own (a stop ends everything it started), from the scrubbed environment
 * the caller gives, with an `error` listener on the child and every stream.
 */
export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child: ChildProcess | undefined;
  private readonly buffer = new ReadBuffer();
  private stderrTail = '';
  private closed = false;

  constructor(private readonly params: { command: string; args: string[]; env: NodeJS.ProcessEnv; cwd?: string }) {}

  /** The end of what the server wrote to stderr (for the message when it fails to start). */
  get stderr(): string {
    return this.stderrTail.trim();
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.params.command, this.params.args, {
        env: this.params.env,
        cwd: this.params.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: process.platform !== 'win32',
        windowsHide: true,
      });
      this.child = child;
      child.on('error', (err) => {
        reject(err);
        this.onerror?.(err);
        this.finish();
      });
      child.on('spawn', () => resolve());
      child.on('close', () => this.finish());
      child.stdin?.on('error', (err) => this.onerror?.(err));
      child.stdout?.on('error', (err) => this.onerror?.(err));
      child.stderr?.on('error', () => {});
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (d: string) => (this.stderrTail = (this.stderrTail + d).slice(-2000)));
      child.stdout?.on('data', (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (err) {
            this.onerror?.(err as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      const stdin = this.child?.stdin;
      if (!stdin || stdin.destroyed) return resolve();
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.stdin?.end();
      killGroup(child, 'SIGTERM');
      const gone = new Promise((r) => child.once('close', r));
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 2000);
      await gone;
      clearTimeout(timer);
    }
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    // Whatever the server left in its group ends with it.
    if (this.child) killGroup(this.child, 'SIGKILL');
    this.onclose?.();
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform === 'win32') child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}
