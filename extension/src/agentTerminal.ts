import * as vscode from 'vscode';
import { runShellCommand, type CommandOptions, type CommandResult } from '../../server/src';

/** The terminal the agent's commands run in, so the person at the desk sees them. */
export const AGENT_TERMINAL_NAME = 'DeskRelay Agent';

const DIM = '\x1b[2m';
const BOLD = '\x1b[1m';
const RESET = '\x1b[0m';

/**
 * The "DeskRelay Agent" terminals, one per folder, one command at a time each. DeskRelay runs
 * the command itself (the same child process as the CLI: the user's shell, its own process
 * group) and shows it live in a terminal of its own, so what the model reads is exactly what
 * the person at the desk sees.
 *
 * Why not a shell terminal read back through shell integration: VS Code's
 * `TerminalShellExecution.read()` drops output under load (a fast command's output arriving in
 * one piece with the prompt, microsoft/vscode#237208, and, still in 1.99, a first command whose
 * whole output never reaches the extension), so the model was told "(no output)" for a command
 * whose output the terminal showed.
 */
export class AgentTerminals implements vscode.Disposable {
  private readonly terminals = new Map<string, AgentTerminal>();
  private readonly queues = new Map<string, Promise<unknown>>();

  run(cwd: string, command: string, env: NodeJS.ProcessEnv, options: CommandOptions): Promise<CommandResult> {
    const previous = this.queues.get(cwd) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.terminalFor(cwd).run(command, cwd, env, options));
    this.queues.set(cwd, next);
    return next;
  }

  private terminalFor(cwd: string): AgentTerminal {
    let terminal = this.terminals.get(cwd);
    if (!terminal || terminal.closed) {
      terminal = new AgentTerminal(() => this.terminals.delete(cwd));
      this.terminals.set(cwd, terminal);
    }
    return terminal;
  }

  dispose(): void {
    for (const t of this.terminals.values()) t.dispose();
    this.terminals.clear();
  }
}

/** One terminal of DeskRelay's own: it prints the commands it is given and their output. */
class AgentTerminal implements vscode.Disposable {
  closed = false;
  private readonly write = new vscode.EventEmitter<string>();
  private readonly ready: Promise<void>;
  private readonly terminal: vscode.Terminal;
  /** Stops the running command: Ctrl+C in the terminal, or the terminal closing. */
  private interrupt: ((why: 'interrupted' | 'closed') => void) | undefined;

  constructor(onClose: () => void) {
    let opened!: () => void;
    this.ready = new Promise((resolve) => (opened = resolve));
    const pty: vscode.Pseudoterminal = {
      onDidWrite: this.write.event,
      open: () => opened(),
      close: () => {
        this.closed = true;
        onClose();
        this.interrupt?.('closed');
        this.write.dispose();
      },
      handleInput: (data) => {
        if (data.includes('\x03')) this.interrupt?.('interrupted');
      },
    };
    this.terminal = vscode.window.createTerminal({ name: AGENT_TERMINAL_NAME, pty, isTransient: true, iconPath: new vscode.ThemeIcon('hubot') });
  }

  async run(command: string, cwd: string, env: NodeJS.ProcessEnv, options: CommandOptions): Promise<CommandResult> {
    this.terminal.show(true);
    // Output written before the terminal opened would be lost; a closed one never opens.
    await Promise.race([this.ready, new Promise((r) => setTimeout(r, 2000))]);
    this.print(`${BOLD}$ ${command}${RESET}\r\n`);
    const local = new AbortController();
    let why: 'interrupted' | 'closed' | undefined;
    this.interrupt = (reason) => {
      why ??= reason;
      local.abort();
    };
    const stop = () => local.abort();
    if (options.signal.aborted) stop();
    else options.signal.addEventListener('abort', stop, { once: true });
    // Split UTF-8 sequences stay whole across chunks; the terminal wants CRLF.
    const decoder = new TextDecoder();
    try {
      const result = await runShellCommand(command, cwd, env, {
        ...options,
        signal: local.signal,
        onOutput: (chunk) => {
          options.onOutput?.(chunk);
          this.print(decoder.decode(chunk, { stream: true }).replace(/\r?\n/g, '\r\n'));
        },
      });
      this.print(decoder.decode().replace(/\r?\n/g, '\r\n'));
      this.print(`${DIM}${ending(result, why)}${RESET}\r\n\r\n`);
      if (why === 'closed') return { ...result, stopped: true, note: `The "${AGENT_TERMINAL_NAME}" terminal was closed while the command ran, which stopped it.` };
      if (why === 'interrupted') return { ...result, stopped: true, note: `Stopped with Ctrl+C in the "${AGENT_TERMINAL_NAME}" terminal at the desk.` };
      return result;
    } finally {
      this.interrupt = undefined;
      options.signal.removeEventListener('abort', stop);
    }
  }

  private print(text: string): void {
    if (text && !this.closed) this.write.fire(text);
  }

  dispose(): void {
    this.interrupt?.('closed');
    this.terminal.dispose();
    this.write.dispose();
  }
}

function ending(result: CommandResult, why: string | undefined): string {
  if (why === 'interrupted') return '[stopped with Ctrl+C]';
  if (result.timedOut) return '[timed out]';
  if (result.stopped || why) return '[stopped]';
  return result.exitCode === null ? '[ended by a signal]' : `[exit code ${result.exitCode}]`;
}
