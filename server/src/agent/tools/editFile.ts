import { approvedEdit } from './approvedEdit';
import { ArgumentError, stringArg, toolSpec, type AgentTool } from './tool';

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
