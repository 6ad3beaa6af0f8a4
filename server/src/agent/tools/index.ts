import { diagnostics } from './diagnostics';
import { editFile, writeFile } from './edits';
import { gitDiff } from './gitDiff';
import { listFiles } from './listFiles';
import { readFile } from './readFile';
import { runCommand } from './runCommand';
import { search } from './search';
import type { AgentTool } from './tool';

/** Every tool the model gets, in the order it is offered. A new tool is one file and one line here. */
export const TOOLS: readonly AgentTool[] = [listFiles, readFile, search, diagnostics, gitDiff, editFile, writeFile, runCommand];

export type { AgentTool, ApprovalKind, PreparedCall, ToolContext } from './tool';
