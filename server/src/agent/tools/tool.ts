import type { ToolSpec } from '../../providers/types';
import type { AgentLimits } from '../limits';
import type { Workspace } from '../workspace';

/**
 * What asks first: never (reads), edits (every edit_file and write_file), commands (per exact
 * command line), host tools (per tool: another extension's tool may do anything).
 */
export type ApprovalKind = 'never' | 'edit' | 'command' | 'tool';

export interface ToolContext {
  workspace: Workspace;
  limits: AgentLimits;
  /** Aborted by the session's stop: a running command is killed, a search ends. */
  signal: AbortSignal;
}

/** A call checked and ready: what the approval shows and the log names, and how to carry it out. */
export interface PreparedCall {
  /** The path or command, for the log (never file contents). */
  subject: string;
  /** Edits: the unified diff of the change. */
  diff?: string;
  /** Commands: the exact command line. */
  command?: string;
  /** What an `allow_session` answer grants (commands: the line; host tools: the tool's name). */
  grantKey?: string;
  /** Carries the call out and returns its result text (a WorkspaceError's message is the result when it fails). */
  run(): Promise<string>;
}

/**
 * One tool the model gets: its name, description and JSON Schema, whether it asks first, and
 * prepare(), which checks the input (throwing a WorkspaceError the model is told) and says what
 * would happen. A new tool is one file with one of these, listed in tools/index.ts.
 */
export interface AgentTool {
  readonly spec: ToolSpec;
  readonly approval: ApprovalKind;
  prepare(input: Record<string, unknown>, ctx: ToolContext): Promise<PreparedCall>;
}

/**
 * A tool's spec: its arguments are exactly `properties` (the schema says no others), `required`
 * among them.
 */
export function toolSpec(name: string, description: string, properties: Record<string, Record<string, unknown>>, required: string[] = []): ToolSpec {
  return { name, description, parameters: { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false } };
}

export const pathProperty = (description: string) => ({ type: 'string', description });

/**
 * A tool that only reads the folder: it never asks first, and `prepare` checks the input and says
 * what it would read (its subject) and how.
 */
export function readingTool(spec: ToolSpec, prepare: (input: Record<string, unknown>, ctx: ToolContext) => PreparedCall): AgentTool {
  return { spec, approval: 'never', prepare: async (input, ctx) => prepare(input, ctx) };
}
