/**
 * What the agent may do in one folder, whatever hosts it: the CLI's node fs (hosts/node) or VS
 * Code's workspace and terminal (the extension). The loop, the policy, the tools and the door
 * know only this contract. Paths are relative to the folder, with `/` separators; a host refuses
 * anything outside the folder or on the deny list by throwing a WorkspaceError, whose message
 * becomes the tool's result (the model is told, nothing crashes).
 */
import type { AgentTool } from './tools/tool';

export interface Workspace {
  /** The folder's name as `GET /v1/agent/folders` lists it (unique among the agent's folders). */
  readonly name: string;
  /** Where it is, as the desk shows it (`~`-shortened); undefined when the host does not say. */
  readonly displayPath?: string;
  /** The folder on disk (absolute): where an ACP agent runs. Undefined when the host has none (ACP agents are then unavailable). */
  readonly absolutePath?: string;
  listFiles(options: ListOptions): Promise<ListResult>;
  /** The file's whole text (unsaved editor text wins where the host has editors). */
  readFile(path: string): Promise<string>;
  /** The text there now, or undefined when no file is there yet (write_file's diff, edit_file's match). */
  readIfExists(path: string): Promise<string | undefined>;
  search(options: SearchOptions): Promise<SearchResult>;
  diagnostics(path: string | undefined): Promise<DiagnosticsResult>;
  /** `git diff` (or `--staged`) in the folder; a WorkspaceError when git or a repository is missing. */
  gitDiff(staged: boolean): Promise<string>;
  /**
   * Refuses (a WorkspaceError) a write writeFile would refuse: a symbolic link, a FIFO or other
   * non-regular file, a hard link, a path through a link leading out. Asked before the approval
   * card is shown, so the phone is never asked about a write that cannot happen; writeFile checks
   * again as it writes.
   */
  checkWrite?(path: string): Promise<void>;
  /**
   * Writes the whole file (made with its folders when new). Called only after an approval.
   * May resolve with a note the result adds (VS Code: an edit left unsaved in the editor).
   */
  writeFile(path: string, content: string): Promise<void | string>;
  /**
   * Removes a file the session made (the Changes view's Undo; never a tool of the model's): the
   * same refusals as writeFile. Hosts without it cannot take back a file the session created.
   */
  removeFile?(path: string): Promise<void>;
  /** Runs one command line in the folder. Called only after an approval. Never rejects for the command's own failure. */
  runCommand(command: string, options: CommandOptions): Promise<CommandResult>;
  /**
   * Tools the host adds besides the built-in ones (VS Code: those other extensions register),
   * asked at every model call. Each says whether it asks first; a name a built-in tool has is
   * left out.
   */
  hostTools?(): readonly AgentTool[];
  /** The same rules rooted at `folder`, a git worktree of this folder made for one session (hosts without it offer no worktrees). */
  worktree?(folder: string): Workspace;
}

export interface ListOptions {
  /** A folder inside the workspace; default its root. */
  path?: string;
  /** A glob (`*.ts`, `src/**\/*.test.ts`) the relative paths must match. */
  pattern?: string;
  maxEntries: number;
}

export interface ListResult {
  files: string[];
  truncated: boolean;
}

export interface SearchOptions {
  query: string;
  path?: string;
  regex: boolean;
  maxMatches: number;
  signal?: AbortSignal;
}

export interface SearchMatch {
  path: string;
  /** 1-based. */
  line: number;
  text: string;
}

export interface SearchResult {
  matches: SearchMatch[];
  truncated: boolean;
}

export interface Diagnostic {
  path: string;
  line: number;
  severity: 'error' | 'warning' | 'info' | 'hint';
  message: string;
}

/** `supported` false: the host has no problems list (the CLI), and the tool says so. */
export type DiagnosticsResult = { supported: true; items: Diagnostic[] } | { supported: false; note: string };

export interface CommandOptions {
  /** Aborting kills the command with every process it started. */
  signal: AbortSignal;
  timeoutMs: number;
  /** Output kept at most (bytes, stdout and stderr interleaved); the end is kept, where failures show. */
  maxOutputBytes: number;
  /** Sees the output as it comes (stdout and stderr interleaved), before any is dropped. */
  onOutput?: (chunk: Buffer) => void;
}

export interface CommandResult {
  output: string;
  /** null when a signal ended it. */
  exitCode: number | null;
  timedOut: boolean;
  stopped: boolean;
  /** Bytes of output dropped from the start to keep within maxOutputBytes. */
  droppedBytes: number;
  /** Something for the model and the user about how it ran (stopped from the desk's terminal, say). */
  note?: string;
}

/** A refusal or failure the model is told as the tool's result (a path outside the folder, a missing file). */
export class WorkspaceError extends Error {}
