/** Every failure of the tunnel helper: the message is written for the user and names cloudflared. */
export class TunnelError extends Error {
  /** What cloudflared printed last, when it is part of the story (also inside `message`). */
  readonly lastLines: readonly string[];

  constructor(message: string, lastLines: readonly string[] = []) {
    super(message);
    this.name = 'TunnelError';
    this.lastLines = lastLines;
  }
}

/** Appends cloudflared's last lines to a message, so a failure explains itself without a log file. */
export function withLastLines(message: string, lines: readonly string[]): string {
  if (lines.length === 0) return `${message} cloudflared printed nothing.`;
  return `${message} Last lines from cloudflared:\n${lines.map((l) => `  ${l}`).join('\n')}`;
}
