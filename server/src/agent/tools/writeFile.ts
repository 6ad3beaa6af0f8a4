import { unifiedDiff } from '../diff';
import { WorkspaceError } from '../workspace';
import { stringArg, type AgentTool } from './tool';

export const writeFile: AgentTool = {
  spec: {
    name: 'write_file',
    description: 'Create a file, or replace a whole file, with "content". The user approves the diff first. Prefer edit_file for changes to an existing file.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'The file, relative to the folder root (folders are created).' },
        content: { type: 'string', description: 'The whole new text of the file.' },
      },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
  approval: 'edit',
  async prepare(input, ctx) {
    const path = stringArg(input, 'path', true);
    const content = stringArg(input, 'content') ?? '';
    const before = await ctx.workspace.readIfExists(path);
    return {
      subject: path,
      diff: unifiedDiff(path, before, content),
      async run() {
        if ((await ctx.workspace.readIfExists(path)) !== before) throw new WorkspaceError(`${path} changed since the diff was shown; nothing was written. Read it again.`);
        await ctx.workspace.writeFile(path, content);
        return before === undefined ? `Created ${path}.` : `Wrote ${path}.`;
      },
    };
  },
};
