import { unifiedDiff } from '../diff';
import { WorkspaceError } from '../workspace';
import type { PreparedCall, ToolContext } from './tool';

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
