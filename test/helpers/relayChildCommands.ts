/**
 * The child's side of relayChild.ts: each stdin line is a command, and SIGTERM, SIGINT or stdin
 * ending (the parent went away, even killed) runs `stop`, so no child outlives its test run.
 */
export function onRelayChildCommands(handle: (command: string) => void, stop: () => void): void {
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  let pending = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    pending += d;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const command = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      handle(command);
    }
  });
  process.stdin.on('end', stop);
}
