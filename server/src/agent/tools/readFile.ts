import { ArgumentError, lineArg, stringArg } from '../../providers/framing';
import { toolSpec, readingTool } from './tool';

export const readFile = readingTool(
  toolSpec('read_file', 'Read a text file of the folder, whole or a range of lines (1-based, inclusive). Lines come numbered as "N: text".', {
    path: { type: 'string', description: 'The file, relative to the folder root.' },
    startLine: { type: 'integer', minimum: 1, description: 'First line to read (default 1).' },
    endLine: { type: 'integer', minimum: 1, description: 'Last line to read (default: the end).' },
  }, ['path']),
  (input, ctx) => {
    const path = stringArg(input, 'path', true);
    const start = lineArg(input, 'startLine') ?? 1;
    const end = lineArg(input, 'endLine');
    if (end !== undefined && end < start) throw new ArgumentError('"endLine" must not be before "startLine".');
    return {
      subject: path,
      run: async () => {
        const text = await ctx.workspace.readFile(path);
        const lines = text.split('\n');
        if (lines.at(-1) === '') lines.pop();
        if (lines.length === 0) return `${path} is empty.`;
        if (start > lines.length) return `${path} has ${lines.length} lines; line ${start} is past its end.`;
        const last = Math.min(end ?? lines.length, lines.length);
        const body = lines.slice(start - 1, last).map((line, i) => `${start + i}: ${line}`);
        return `${path} (lines ${start}-${last} of ${lines.length})\n${body.join('\n')}`;
      },
    };
  },
);
