import { booleanArg, stringArg } from '../../providers/framing';
import { toolSpec, readingTool } from './tool';

export const search = readingTool(
  toolSpec('search', 'Search the text of the folder\'s files (honouring .gitignore) for a string, or a JavaScript regular expression with regex: true. Case-sensitive. Answers "path:line: text" per match.', {
    query: { type: 'string', description: 'The text (or regular expression) to find in a line.' },
    path: { type: 'string', description: 'Search only under this subfolder or file.' },
    regex: { type: 'boolean', description: 'Treat query as a regular expression.' },
  }, ['query']),
  (input, ctx) => {
    const query = stringArg(input, 'query', true);
    const path = stringArg(input, 'path');
    const regex = booleanArg(input, 'regex');
    return {
      subject: path || '.',
      run: async () => {
        const { matches, truncated } = await ctx.workspace.search({ query, path, regex, maxMatches: ctx.limits.maxSearchMatches, signal: ctx.signal });
        if (matches.length === 0) return `No matches for ${regex ? `/${query}/` : `"${query}"`}.`;
        const lines = matches.map((m) => `${m.path}:${m.line}: ${m.text}`);
        return lines.join('\n') + (truncated ? `\n[only the first ${ctx.limits.maxSearchMatches} matches; narrow the query or path]` : '');
      },
    };
  },
);
