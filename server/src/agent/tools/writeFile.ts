import { approvedEdit } from './approvedEdit';
import { stringArg, toolSpec, type AgentTool } from './tool';

export const writeFile: AgentTool = {
  spec: toolSpec('write_file', 'Create a file, or replace a whole file, with "content". The user approves the diff first. Prefer edit_file for changes to an existing file.', {
    path: { type: 'string', description: 'The file, relative to the folder root (folders are created).' },
    content: { type: 'string', description: 'The whole new text of the file.' },
  }, ['path', 'content']),
  approval: 'edit',
  async prepare(input, ctx) {
    const path = stringArg(input, 'path', true);
    const content = stringArg(input, 'content') ?? '';
    const before = await ctx.workspace.readIfExists(path);
    return approvedEdit(ctx, path, before, content, before === undefined ? `Created ${path}.` : `Wrote ${path}.`);
  },
};
