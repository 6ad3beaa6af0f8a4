/** The server logs through this; the CLI writes to stderr, the extension to its output channel. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/**
 * Lines to a stream, stamped when logged and written together once the event loop has run the
 * callbacks at hand (setImmediate): a write to a pipe, a file or a terminal is a synchronous
 * syscall in Node on Linux, and one per request was paid again by every stream that arrived in
 * the same instant (bench/NOTES.md, issue 28). Whatever is pending is written before the process
 * exits, so a line logged just before an exit is not lost.
 */
export function consoleLogger(stream: NodeJS.WritableStream = process.stderr): Logger {
  let pending = '';
  const flush = () => {
    if (pending === '') return;
    const text = pending;
    pending = '';
    stream.write(text);
  };
  let hooked = false;
  // A burst logs many lines in the same millisecond: its timestamp is formatted once.
  let stampedAt = -1;
  let stamp = '';
  const line = (level: string, message: string) => {
    const now = Date.now();
    if (now !== stampedAt) {
      stampedAt = now;
      stamp = new Date(now).toISOString();
    }
    if (pending === '') {
      setImmediate(flush);
      if (!hooked) {
        hooked = true;
        process.once('exit', flush);
      }
    }
    pending += `${stamp} ${level} ${message}\n`;
  };
  return {
    info: (m) => line('info', m),
    warn: (m) => line('warn', m),
    error: (m) => line('error', m),
  };
}
