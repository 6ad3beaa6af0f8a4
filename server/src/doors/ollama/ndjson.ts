import type { ServerResponse } from 'node:http';

/**
 * The writer of an Ollama stream (`application/x-ndjson`): lines written in one tick leave as one
 * write (a provider read's tokens together, as on the SSE stream), `flush()` returns the wait
 * for a client that is not keeping up, and exactly one last line ends the response. NDJSON has
 * no comment line, so unlike the SSE stream nothing is written while the provider is silent.
 */
export class NdjsonStream {
  private terminal = false;
  private pending = '';
  private readonly flushPending = (): void => {
    if (this.pending === '') return;
    const data = this.pending;
    this.pending = '';
    if (!this.ended) this.res.write(data);
  };

  constructor(private readonly res: ServerResponse) {}

  /** Sends the 200 and its headers at once, before the provider has said anything. */
  open(): void {
    const res = this.res;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/x-ndjson');
    // Proxies must neither buffer nor compress the stream (nginx honours X-Accel-Buffering).
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    // Small writes must leave at once: Nagle would hold a token back waiting for an ACK.
    res.socket?.setNoDelay(true);
  }

  /** True once the last line was written or the client went away. */
  get ended(): boolean {
    return this.terminal || this.res.destroyed;
  }

  /** Queues one line (with its `\n`) for this tick's write. */
  write(line: string): void {
    if (this.ended || line === '') return;
    if (this.pending === '') process.nextTick(this.flushPending);
    this.pending += line;
  }

  /** Sends what was written so far; when the client is not keeping up, returns the wait for it. */
  flush(): void | Promise<void> {
    this.flushPending();
    if (this.ended || !this.res.writableNeedDrain) return undefined;
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done).off('close', done);
        resolve();
      };
      this.res.on('drain', done).on('close', done);
    });
  }

  /** Writes the last line (once; later calls do nothing) and ends the response. */
  finish(line: string): void {
    if (this.ended) return;
    this.terminal = true;
    const data = this.pending + line;
    this.pending = '';
    this.res.end(data);
  }
}
