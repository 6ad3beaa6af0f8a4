/** The server logs through this; the CLI writes to stderr, the extension to its output channel. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

export function consoleLogger(stream: NodeJS.WritableStream = process.stderr): Logger {
  const line = (level: string, message: string) => stream.write(`${new Date().toISOString()} ${level} ${message}\n`);
  return {
    info: (m) => line('info', m),
    warn: (m) => line('warn', m),
    error: (m) => line('error', m),
  };
}
