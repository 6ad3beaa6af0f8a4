import { stringArg } from '../../providers/framing';
import { toolSpec, readingTool } from './tool';

export const diagnostics = readingTool(
  toolSpec('diagnostics', 'The editor\'s problems (errors and warnings from its language servers) for the folder or one file.', { path: { type: 'string', description: 'One file, relative to the folder root. Default: every file.' } }),
  (input, ctx) => {
    const path = stringArg(input, 'path');
    return {
      subject: path || '.',
      run: async () => {
        const result = await ctx.workspace.diagnostics(path || undefined);
        if (!result.supported) return result.note;
        if (result.items.length === 0) return 'No problems.';
        return result.items.map((d) => `${d.path}:${d.line}: ${d.severity}: ${d.message}`).join('\n');
      },
    };
  },
);
