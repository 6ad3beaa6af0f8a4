/**
 * Why a tunnel failed, for hosts that offer a way out: `agent-missing` means the agent's program
 * was not found or cannot be run (the extension offers to install it or set its path);
 * `not-loopback` means the relay listens where no agent may forward to; everything else is `failed`.
 */
export type TunnelErrorCode = 'agent-missing' | 'not-loopback' | 'failed';

/** Every failure of a tunnel: the message is written for the user and names the agent (cloudflared, …). */
export class TunnelError extends Error {
  /** What the agent printed last, when it is part of the story (also inside `message`). */
  readonly lastLines: readonly string[];
  readonly code: TunnelErrorCode;

  constructor(message: string, lastLines: readonly string[] = [], code: TunnelErrorCode = 'failed') {
    super(message);
    this.name = 'TunnelError';
    this.lastLines = lastLines;
    this.code = code;
  }
}

/** Appends the agent's last lines to a message, so a failure explains itself without a log file. */
export function withLastLines(message: string, lines: readonly string[], agent = 'cloudflared'): string {
  if (lines.length === 0) return `${message} ${agent} printed nothing.`;
  return `${message} Last lines from ${agent}:\n${lines.map((l) => `  ${l}`).join('\n')}`;
}
