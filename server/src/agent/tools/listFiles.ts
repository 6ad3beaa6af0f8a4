import { stringArg } from '../../providers/framing';
import { toolSpec, readingTool } from './tool';

export const listFiles = readingTool(
  toolSpec('list_files', 'List the files in the folder (or under a subfolder), honouring .gitignore. Optionally filter with a glob such as "*.ts" or "src/**/*.test.ts".', {
    path: { type: 'string', description: 'A subfolder, relative to the folder root. Default: the root.' },
    pattern: { type: 'string', description: 'A glob the relative paths must match.' },
  }),
  (input, ctx) => {
    const path = stringArg(input, 'path');
    const pattern = stringArg(input, 'pattern');
    return {
      subject: path || '.',
      run: async () => {
        const { files, truncated } = await ctx.workspace.listFiles({ path, pattern, maxEntries: ctx.limits.maxListEntries });
        if (files.length === 0) return pattern ? `No files match "${pattern}".` : 'No files.';
        return files.join('\n') + (truncated ? `\n[only the first ${ctx.limits.maxListEntries} files; narrow the path or pattern]` : '');
      },
    };
  },
);
