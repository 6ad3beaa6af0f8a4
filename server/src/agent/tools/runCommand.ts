import { ArgumentError, stringArg } from '../../providers/framing';
import { toolSpec, type AgentTool } from './tool';

/** A command line's length at most: a phone's card shows all of it. */
export const MAX_COMMAND_CHARS = 2000;

/**
 * What a command line may not hold: C0 and C1 controls (line breaks and tab included: /bin/sh
 * runs every line, and a card cannot show them as they act) and the invisible or bidirectional
 * format characters that make a line read other than it runs.
 */
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/u;

const ONE_LINE = `Send the command as one line: no line breaks, tabs, control or invisible characters, at most ${MAX_COMMAND_CHARS} characters (join steps with &&). Nothing was run.`;

/** Refuses a command line the user could not see whole on the approval card. */
export function checkCommandLine(command: string): void {
  const bad = UNSHOWABLE.exec(command);
  if (bad) throw new ArgumentError(`The command holds U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}. ${ONE_LINE}`);
  if (command.length > MAX_COMMAND_CHARS) throw new ArgumentError(`The command is ${command.length} characters long. ${ONE_LINE}`);
}

export const runCommand: AgentTool = {
  spec: toolSpec('run_command', `Run one shell command line in the folder (the user approves the exact line first). One line only: no line breaks, tabs or control characters, at most ${MAX_COMMAND_CHARS} characters; join steps with &&. Answers the exit code and the output (stdout and stderr together; the end is kept when long). No input is given; commands are stopped after a time limit.`, { command: { type: 'string', description: 'The command line, e.g. "npm test".' } }, ['command']),
  approval: 'command',
  async prepare(input, ctx) {
    const command = stringArg(input, 'command', true);
    checkCommandLine(command);
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
