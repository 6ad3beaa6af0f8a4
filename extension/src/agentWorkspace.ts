import { execFile } from 'node:child_process';
import { isAbsolute, join, relative, sep } from 'node:path';
import * as vscode from 'vscode';
import {
  NodeWorkspace,
  WorkspaceError,
  findRipgrep,
  globToRegExp,
  isDenied,
  runShellCommand,
  type CommandOptions,
  type CommandResult,
  type Diagnostic,
  type DiagnosticsResult,
  type ListOptions,
  type ListResult,
  type SearchOptions,
  type SearchResult,
  type AgentTool,
  type Workspace,
} from '../../server/src';

/** The terminal the agent's commands run in, so the person at the desk sees them. */
export const AGENT_TERMINAL_NAME = 'DeskRelay Agent';
/** How long a new terminal may take to report shell integration before the hidden process is used. */
const SHELL_INTEGRATION_WAIT_MS = 4000;
const KILL_GRACE_MS = 2000;
const MAX_FILE_BYTES = 4 * 1024 * 1024;

export interface VsCodeWorkspaceOptions {
  name: string;
  denyPaths: readonly string[];
  configDir: string;
  /** The environment commands run with (DeskRelay's variables and provider keys already removed). */
  env: () => NodeJS.ProcessEnv;
  /** The tools other extensions registered that the model gets too. */
  hostTools: () => readonly AgentTool[];
}

/**
 * The Workspace contract in VS Code, for one open folder on disk: reads through workspace.fs
 * with unsaved editor text winning, edits as a WorkspaceEdit then saved (so Undo works),
 * the Problems list from languages.getDiagnostics, commands in the visible "DeskRelay Agent"
 * terminal, search through ripgrep when there is one. Path checks, listing and git diff are the
 * CLI host's (same rules, same deny list), since the folder is on this machine's disk.
 */
export class VsCodeWorkspace implements Workspace {
  readonly name: string;
  readonly displayPath: string;
  private readonly files: NodeWorkspace;
  private readonly deny: readonly string[];

  constructor(
    readonly folder: vscode.WorkspaceFolder,
    private readonly options: VsCodeWorkspaceOptions,
    private readonly terminals: AgentTerminals,
  ) {
    this.name = options.name;
    this.deny = options.denyPaths;
    this.files = new NodeWorkspace({
      folder: folder.uri.fsPath,
      name: options.name,
      denyPaths: options.denyPaths,
      configDir: options.configDir,
      env: options.env(),
      ripgrep: findVsCodeRipgrep,
    });
    this.displayPath = this.files.displayPath;
  }

  listFiles(options: ListOptions): Promise<ListResult> {
    return this.files.listFiles(options);
  }

  search(options: SearchOptions): Promise<SearchResult> {
    return this.files.search(options);
  }

  gitDiff(staged: boolean): Promise<string> {
    return this.files.gitDiff(staged);
  }

  async readFile(path: string): Promise<string> {
    const text = await this.readIfExists(path);
    if (text === undefined) throw new WorkspaceError(`No file "${path}" in the folder.`);
    return text;
  }

  async readIfExists(path: string): Promise<string | undefined> {
    const { abs } = await this.files.resolve(path);
    const uri = vscode.Uri.file(abs);
    // What the person at the desk sees, unsaved changes included.
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === uri.fsPath);
    if (open) return open.getText();
    let stat: vscode.FileStat;
    try {
      stat = await vscode.workspace.fs.stat(uri);
    } catch {
      return undefined;
    }
    if (stat.type & vscode.FileType.Directory) throw new WorkspaceError(`"${path}" is a folder; list_files shows what is in it.`);
    if (stat.size > MAX_FILE_BYTES) throw new WorkspaceError(`"${path}" is ${stat.size} bytes; the agent reads files up to ${MAX_FILE_BYTES} bytes.`);
    const bytes = Buffer.from(await vscode.workspace.fs.readFile(uri));
    if (bytes.subarray(0, 8192).includes(0)) throw new WorkspaceError(`"${path}" is a binary file.`);
    return bytes.toString('utf8');
  }

  async writeFile(path: string, content: string): Promise<void> {
    const { abs } = await this.files.resolve(path);
    const uri = vscode.Uri.file(abs);
    const edit = new vscode.WorkspaceEdit();
    let exists = true;
    try {
      if ((await vscode.workspace.fs.stat(uri)).type & vscode.FileType.Directory) throw new WorkspaceError(`"${path}" is a folder.`);
    } catch (err) {
      if (err instanceof WorkspaceError) throw err;
      exists = false;
    }
    if (exists) {
      const doc = await vscode.workspace.openTextDocument(uri);
      edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), content);
    } else {
      edit.createFile(uri, { contents: Buffer.from(content, 'utf8') });
    }
    if (!(await vscode.workspace.applyEdit(edit))) throw new WorkspaceError(`VS Code did not apply the edit to ${path}.`);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === uri.fsPath);
    if (doc?.isDirty && !(await doc.save())) throw new WorkspaceError(`The edit to ${path} was made in the editor but could not be saved.`);
  }

  diagnostics(path: string | undefined): Promise<DiagnosticsResult> {
    const root = this.folder.uri.fsPath;
    const deny = this.deny.map(globToRegExp);
    const only = path?.replace(/\\/g, '/').replace(/^\.\//, '');
    const items: Diagnostic[] = [];
    for (const [uri, list] of vscode.languages.getDiagnostics()) {
      if (uri.scheme !== 'file') continue;
      const rel = relative(root, uri.fsPath).split(sep).join('/');
      if (rel === '' || rel === '..' || rel.startsWith('../') || isAbsolute(rel) || isDenied(rel, deny) || (only && rel !== only)) continue;
      for (const d of list) items.push({ path: rel, line: d.range.start.line + 1, severity: SEVERITY[d.severity], message: d.message });
    }
    return Promise.resolve({ supported: true, items });
  }

  runCommand(command: string, options: CommandOptions): Promise<CommandResult> {
    return this.terminals.run(this.folder.uri.fsPath, command, this.options.env(), options);
  }

  hostTools(): readonly AgentTool[] {
    return this.options.hostTools();
  }
}

let ripgrep: string | undefined | null = null;

/**
 * The ripgrep VS Code ships (under its appRoot, or the `.asar.unpacked` twin, where other
 * extensions find it: `findTextInFiles` is still a proposed API), else `rg` on PATH, else none
 * (the plain search). Looked up once.
 */
export function findVsCodeRipgrep(): string | undefined {
  if (ripgrep !== null) return ripgrep;
  const exe = process.platform === 'win32' ? 'rg.exe' : 'rg';
  ripgrep = findRipgrep(['node_modules', 'node_modules.asar.unpacked'].map((dir) => join(vscode.env.appRoot, dir, '@vscode', 'ripgrep', 'bin', exe)));
  return ripgrep;
}

/** What a provider accepts as a tool name (OpenAI's rule, the strictest of them). */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The tools other extensions registered with VS Code (`vscode.lm.tools`), offered to the model
 * as they are; each asks first unless the user listed it in `deskrelay.agent.autoApproveTools`,
 * since DeskRelay cannot know what another extension's tool does.
 */
export function lmTools(autoApprove: readonly string[]): AgentTool[] {
  return vscode.lm.tools
    .filter((info) => TOOL_NAME.test(info.name))
    .map(
      (info): AgentTool => ({
        spec: { name: info.name, description: info.description, parameters: (info.inputSchema as Record<string, unknown> | undefined) ?? { type: 'object', properties: {} } },
        approval: autoApprove.includes(info.name) ? 'never' : 'tool',
        prepare(input, ctx) {
          return Promise.resolve({
            subject: info.name,
            grantKey: info.name,
            async run() {
              const cancel = new vscode.CancellationTokenSource();
              const onAbort = () => cancel.cancel();
              ctx.signal.addEventListener('abort', onAbort, { once: true });
              try {
                const result = await vscode.lm.invokeTool(info.name, { input, toolInvocationToken: undefined }, cancel.token);
                const text = result.content
                  .map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : ''))
                  .join('');
                return text === '' ? `${info.name} returned nothing readable as text.` : text;
              } catch (err) {
                throw new WorkspaceError(`${info.name} failed: ${err instanceof Error ? err.message : String(err)}`);
              } finally {
                ctx.signal.removeEventListener('abort', onAbort);
                cancel.dispose();
              }
            },
          });
        },
      }),
    );
}

const SEVERITY: Record<vscode.DiagnosticSeverity, Diagnostic['severity']> = {
  [vscode.DiagnosticSeverity.Error]: 'error',
  [vscode.DiagnosticSeverity.Warning]: 'warning',
  [vscode.DiagnosticSeverity.Information]: 'info',
  [vscode.DiagnosticSeverity.Hint]: 'hint',
};

/**
 * The "DeskRelay Agent" terminals, one per folder, one command at a time each. With shell
 * integration the command runs in the terminal and its output and exit code are read from it;
 * without (a shell VS Code cannot integrate with), it runs as a hidden process and the result
 * says so.
 */
export class AgentTerminals implements vscode.Disposable {
  private readonly terminals = new Map<string, vscode.Terminal>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly closed: vscode.Disposable;

  constructor() {
    this.closed = vscode.window.onDidCloseTerminal((t) => {
      for (const [cwd, known] of this.terminals) if (known === t) this.terminals.delete(cwd);
    });
  }

  run(cwd: string, command: string, env: NodeJS.ProcessEnv, options: CommandOptions): Promise<CommandResult> {
    const previous = this.queues.get(cwd) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.runNow(cwd, command, env, options));
    this.queues.set(cwd, next);
    return next;
  }

  private async runNow(cwd: string, command: string, env: NodeJS.ProcessEnv, options: CommandOptions): Promise<CommandResult> {
    let terminal = this.terminals.get(cwd);
    if (!terminal || terminal.exitStatus !== undefined) {
      terminal = vscode.window.createTerminal({ name: AGENT_TERMINAL_NAME, cwd, env, strictEnv: true, isTransient: true });
      this.terminals.set(cwd, terminal);
    }
    terminal.show(true);
    const integration = terminal.shellIntegration ?? (await shellIntegrationOf(terminal, SHELL_INTEGRATION_WAIT_MS));
    if (!integration) {
      const result = await runShellCommand(command, cwd, env, options);
      return { ...result, note: 'Ran as a hidden process: the "DeskRelay Agent" terminal has no shell integration here, so its output could not be read from it.' };
    }
    return runInTerminal(terminal, integration, command, options);
  }

  dispose(): void {
    this.closed.dispose();
    for (const t of this.terminals.values()) t.dispose();
    this.terminals.clear();
  }
}

function shellIntegrationOf(terminal: vscode.Terminal, timeoutMs: number): Promise<vscode.TerminalShellIntegration | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      sub.dispose();
      resolve(terminal.shellIntegration);
    }, timeoutMs);
    const sub = vscode.window.onDidChangeTerminalShellIntegration((e) => {
      if (e.terminal !== terminal) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(e.shellIntegration);
    });
  });
}

/** Escape sequences a terminal's output carries (colours, cursor moves, shell integration's OSC 633). */
const ESCAPES = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g;

async function runInTerminal(terminal: vscode.Terminal, integration: vscode.TerminalShellIntegration, command: string, options: CommandOptions): Promise<CommandResult> {
  const shellPid = await terminal.processId;
  const subs: vscode.Disposable[] = [];
  // The output is read from when the shell says the command started: a stream opened earlier
  // (a terminal still starting its shell) or later gets nothing, and VS Code may announce the
  // start before executeCommand returns. Commands in this terminal run one at a time, so the
  // first start in it is ours.
  let started: vscode.TerminalShellExecution | undefined;
  let stream: AsyncIterable<string> | undefined;
  let onStart: (() => void) | undefined;
  subs.push(
    vscode.window.onDidStartTerminalShellExecution((e) => {
      if (e.terminal !== terminal || started) return;
      started = e.execution;
      stream = e.execution.read();
      onStart?.();
    }),
  );
  const execution = integration.executeCommand(command);
  const ours = (e: vscode.TerminalShellExecution) => e === execution || e === started;
  let exitCode: number | null | undefined;
  let closedNote: string | undefined;
  const ended = new Promise<void>((resolve) => {
    subs.push(
      vscode.window.onDidEndTerminalShellExecution((e) => {
        if (!ours(e.execution)) return;
        exitCode = e.exitCode ?? null;
        resolve();
      }),
      // The command ended the shell itself (`exit`), or the person at the desk closed the terminal.
      vscode.window.onDidCloseTerminal((t) => {
        if (t !== terminal) return;
        exitCode ??= t.exitStatus?.code ?? null;
        closedNote = 'The "DeskRelay Agent" terminal closed while the command ran.';
        resolve();
      }),
    );
  });
  let timedOut = false;
  let stopped = false;
  const kill = () => void killChildren(shellPid);
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);
  const onAbort = () => {
    stopped = true;
    kill();
  };
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  let output = '';
  let dropped = 0;
  try {
    if (!started) {
      await Promise.race([new Promise<void>((resolve) => (onStart = resolve)), ended, new Promise((r) => setTimeout(r, SHELL_INTEGRATION_WAIT_MS))]);
    }
    const output$ = stream ?? execution.read();
    const reading = (async () => {
      for await (const data of output$) {
        output += data.replace(ESCAPES, '').replace(/\r\n?/g, '\n');
        const over = Buffer.byteLength(output) - options.maxOutputBytes;
        if (over > 0) {
          const cut = Buffer.from(output).subarray(over).toString('utf8');
          dropped += Buffer.byteLength(output) - Buffer.byteLength(cut);
          output = cut;
        }
      }
    })();
    // The output stream ends with the execution; a closed terminal may never end it.
    await Promise.race([Promise.all([ended, reading]), ended.then(() => new Promise((r) => setTimeout(r, 500)))]);
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', onAbort);
    for (const s of subs) s.dispose();
  }
  return { output, exitCode: exitCode ?? null, timedOut, stopped, droppedBytes: dropped, ...(closedNote ? { note: closedNote } : {}) };
}

/**
 * Kills what the terminal's shell is running (not the shell): each child with its process group
 * (an interactive shell gives every job its own), SIGTERM then SIGKILL.
 */
async function killChildren(shellPid: number | undefined): Promise<void> {
  if (shellPid === undefined || process.platform === 'win32') return;
  const children = await new Promise<number[]>((resolve) => {
    execFile('ps', ['-o', 'pid=', '--ppid', String(shellPid)], (err, stdout) => resolve(err ? [] : stdout.split('\n').map((s) => Number(s.trim())).filter((n) => n > 0)));
  });
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of children) {
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, sig);
        } catch {
          // already gone
        }
      }
    }
  };
  signal('SIGTERM');
  setTimeout(() => signal('SIGKILL'), KILL_GRACE_MS).unref();
}
