import { stringArg, toolSpec, type AgentTool } from './tool';

export const runCommand: AgentTool = {
  spec: toolSpec('run_command', 'Run one shell command line in the folder (the user approves the exact line first). Answers the exit code and the output (stdout and stderr together; the end is kept when long). No input is given; commands are stopped after a time limit.', { command: { type: 'string', description: 'The command line, e.g. "npm test".' } }, ['command']),
  approval: 'command',
  async prepare(input, ctx) {
    const command = stringArg(input, 'command', true);
    return {
      subject: command,
      command,
      grantKey: command,
      async run() {
        const r = await ctx.workspace.runCommand(command, { signal: ctx.signal, timeoutMs: ctx.limits.commandTimeoutMs, maxOutputBytes: ctx.limits.maxCommandOutputBytes });
        const how = r.stopped
          ? 'Stopped by the user; the command and every process it started were killed.'
          : r.timedOut
            ? `Timed out after ${ctx.limits.commandTimeoutMs / 1000} s; the command and every process it started were killed.`
            : r.exitCode === null
              ? 'Ended by a signal.'
              : `Exit code ${r.exitCode}.`;
        const parts = [how];
        if (r.note) parts.push(r.note);
        if (r.droppedBytes > 0) parts.push(`[the first ${r.droppedBytes} bytes of output were dropped; the last ${ctx.limits.maxCommandOutputBytes} follow]`);
        parts.push(r.output === '' ? '(no output)' : r.output);
        return parts.join('\n');
      },
    };
  },
};
