import { unifiedDiff } from '../changes';
import { WorkspaceError } from '../workspace';
import { ArgumentError, stringArg } from '../../providers/framing';
import { toolSpec, type AgentTool, type PreparedCall, type ToolContext } from './tool';

/**
 * An edit the user approves as the diff of `before` (undefined: no file yet) to `after`. What was
 * approved is this diff against this text: a file changed meanwhile is not overwritten. A write the
 * host would refuse (a link, a FIFO) is refused before the card is shown.
 */
export async function approvedEdit(ctx: ToolContext, path: string, before: string | undefined, after: string, done: string): Promise<PreparedCall> {
  await ctx.workspace.checkWrite?.(path);
  return {
    subject: path,
    diff: unifiedDiff(path, before, after),
    async run() {
      if ((await ctx.workspace.readIfExists(path)) !== before) throw new WorkspaceError(`${path} changed since the diff was shown; nothing was written. Read it again.`);
      const note = await ctx.workspace.writeFile(path, after);
      return note ? `${done} ${note}` : done;
    },
  };
}

/** A whole file written with `content` (created when missing), as write_file and an ACP agent's fs/write_text_file ask for it. */
export async function approvedWrite(ctx: ToolContext, path: string, content: string): Promise<PreparedCall> {
  const before = await ctx.workspace.readIfExists(path);
  return approvedEdit(ctx, path, before, content, before === undefined ? `Created ${path}.` : `Wrote ${path}.`);
}

export const editFile: AgentTool = {
  spec: toolSpec('edit_file', 'Replace one exact piece of a file: "old" must occur exactly once in it (include enough surrounding lines to make it unique); it becomes "new". The user approves the diff first.', {
    path: { type: 'string', description: 'The file, relative to the folder root.' },
    old: { type: 'string', description: 'The exact text to replace, unique in the file.' },
    new: { type: 'string', description: 'The text to put in its place.' },
  }, ['path', 'old', 'new']),
  approval: 'edit',
  async prepare(input, ctx) {
    const path = stringArg(input, 'path', true);
    const old = stringArg(input, 'old', true);
    const replacement = stringArg(input, 'new') ?? '';
    const before = await ctx.workspace.readFile(path);
    const at = before.indexOf(old);
    if (at < 0) throw new ArgumentError(`"old" does not occur in ${path}; read the file and copy the text exactly.`);
    if (before.indexOf(old, at + 1) >= 0) throw new ArgumentError(`"old" occurs more than once in ${path}; include more surrounding lines so it is unique.`);
    const after = before.slice(0, at) + replacement + before.slice(at + old.length);
    return approvedEdit(ctx, path, before, after, `Edited ${path}.`);
  },
};

export const writeFile: AgentTool = {
  spec: toolSpec('write_file', 'Create a file, or replace a whole file, with "content". The user approves the diff first. Prefer edit_file for changes to an existing file.', {
    path: { type: 'string', description: 'The file, relative to the folder root (folders are created).' },
    content: { type: 'string', description: 'The whole new text of the file.' },
  }, ['path', 'content']),
  approval: 'edit',
  prepare: async (input, ctx) => approvedWrite(ctx, stringArg(input, 'path', true), stringArg(input, 'content') ?? ''),
};
