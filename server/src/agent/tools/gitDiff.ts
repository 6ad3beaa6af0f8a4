import { booleanArg } from '../../providers/framing';
import { toolSpec, readingTool } from './tool';

export const gitDiff = readingTool(
  toolSpec('git_diff', 'The folder\'s uncommitted changes as `git diff` shows them (staged: true for what is staged); protected files are left out.', { staged: { type: 'boolean', description: 'Show the staged changes instead of the unstaged ones.' } }),
  (input, ctx) => {
    const staged = booleanArg(input, 'staged');
    return {
      subject: staged ? '--staged' : '.',
      run: async () => {
        const diff = await ctx.workspace.gitDiff(staged);
        return diff === '' ? (staged ? 'Nothing is staged.' : 'No unstaged changes.') : diff;
      },
    };
  },
);
