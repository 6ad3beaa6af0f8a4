import { isAbsolute, join, relative, sep } from 'node:path';
import * as vscode from 'vscode';
import {
  NodeWorkspace,
  WorkspaceError,
  findRipgrep,
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
import type { AppliedEdits } from './agentEdits';
import type { AgentTerminals } from './agentTerminal';

export interface VsCodeWorkspaceOptions {
  name: string;
  denyPaths: readonly string[];
  configDir: string;
  /** The environment commands run with, already scrubbed by commandEnv (settings `deskrelay.agent.env.*` applied), asked per command. */
  env: () => NodeJS.ProcessEnv;
  /** The tools other extensions registered that the model gets too. */
  hostTools: () => readonly AgentTool[];
  /** Where each applied edit is kept with its own before and after (Open diff, revert, Undo). */
  edits: AppliedEdits;
}

/**
 * The Workspace contract in VS Code, for one open folder on disk: reads through workspace.fs
 * with unsaved editor text winning, edits as a WorkspaceEdit (so Undo works), saved unless the
 * file had unsaved changes of the user's (an agent edit never saves what the user typed),
 * the Problems list from languages.getDiagnostics, commands in the visible "DeskRelay Agent"
 * terminal, search through ripgrep when there is one. Path checks, reading from disk, listing
 * and git diff are the CLI host's (same rules, same deny list, same refusal of links, FIFOs and
 * hard links), since the folder is on this machine's disk.
 */
export class VsCodeWorkspace implements Workspace {
  readonly name: string;
  readonly displayPath: string;
  private readonly files: NodeWorkspace;

  constructor(
    readonly folder: vscode.WorkspaceFolder,
    private readonly options: VsCodeWorkspaceOptions,
    private readonly terminals: AgentTerminals,
  ) {
    this.name = options.name;
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

  get absolutePath(): string {
    return this.folder.uri.fsPath;
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
    // Read from disk by the CLI host's rules first (never workspace.fs, whose blocking read of a
    // FIFO would hold a thread of the extension host's pool): a FIFO, a hard link, a file too
    // large or binary is refused even when an editor has it open.
    const disk = await this.files.readIfExists(path);
    // What the person at the desk sees, unsaved changes included.
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === vscode.Uri.file(abs).fsPath);
    return open ? open.getText() : disk;
  }

  checkWrite(path: string): Promise<void> {
    return this.files.checkWrite(path);
  }

  async writeFile(path: string, content: string): Promise<string | undefined> {
    // VS Code's WorkspaceEdit and save follow links and cannot open without following: the path
    // is checked (no link at its end, none leading out or to nothing on the way, a regular file
    // with one name) just before VS Code writes it.
    await this.files.checkWrite(path);
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
    let before: string | undefined;
    let unsaved = false;
    if (exists) {
      const doc = await vscode.workspace.openTextDocument(uri);
      before = doc.getText();
      unsaved = doc.isDirty;
      edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(before.length)), content);
    } else {
      edit.createFile(uri, { contents: Buffer.from(content, 'utf8') });
    }
    if (!(await vscode.workspace.applyEdit(edit))) throw new WorkspaceError(`VS Code did not apply the edit to ${path}.`);
    this.options.edits.record(this.folder.uri.fsPath, path, uri, before, content);
    // Saving would write the user's own unsaved text with the agent's: the edit stays in the
    // editor, unsaved, and the result says so (the card and the model see it).
    if (unsaved) return 'The file had unsaved changes in the editor: the edit was made there and left unsaved; the user saves it.';
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === uri.fsPath);
    if (doc?.isDirty && !(await doc.save())) throw new WorkspaceError(`The edit to ${path} was made in the editor but could not be saved.`);
    return undefined;
  }

  /** The phone's Undo of a file the session made: removed as an edit, so an open editor follows. */
  async removeFile(path: string): Promise<void> {
    await this.files.checkWrite(path);
    const { abs } = await this.files.resolve(path);
    const edit = new vscode.WorkspaceEdit();
    edit.deleteFile(vscode.Uri.file(abs), { ignoreIfNotExists: true });
    if (!(await vscode.workspace.applyEdit(edit))) throw new WorkspaceError(`VS Code did not remove ${path}.`);
  }

  diagnostics(path: string | undefined): Promise<DiagnosticsResult> {
    const root = this.folder.uri.fsPath;
    const only = path?.replace(/\\/g, '/').replace(/^\.\//, '');
    const items: Diagnostic[] = [];
    for (const [uri, list] of vscode.languages.getDiagnostics()) {
      if (uri.scheme !== 'file') continue;
      const rel = relative(root, uri.fsPath).split(sep).join('/');
      if (rel === '' || rel === '..' || rel.startsWith('../') || isAbsolute(rel) || this.files.denied(rel) || (only && rel !== only)) continue;
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
