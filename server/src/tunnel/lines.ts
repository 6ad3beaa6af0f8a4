// Agents log line by line; these turn their byte streams into lines and keep the last few for
// error messages. ANSI colour codes go: agents add them when they think they write to a terminal.
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;

/** Splits a byte stream into lines; a chunk may end in the middle of one. */
export class LineSplitter {
  private rest = '';

  push(chunk: string): string[] {
    const text = this.rest + chunk;
    const parts = text.split(/\r?\n/);
    this.rest = parts.pop() ?? '';
    return parts.map(clean).filter((l) => l.length > 0);
  }

  flush(): string[] {
    const last = clean(this.rest);
    this.rest = '';
    return last ? [last] : [];
  }
}

function clean(line: string): string {
  return line.replace(ANSI, '').trimEnd();
}

/** The last `size` lines, for error messages. */
export class LastLines {
  private lines: string[] = [];

  constructor(private readonly size = 20) {}

  add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.size) this.lines.shift();
  }

  clear(): void {
    this.lines = [];
  }

  get(): string[] {
    return [...this.lines];
  }
}
