import { CancelReason } from './events';

interface LiveStream {
  controller: AbortController;
  finished: Promise<void>;
  /** The device the chat runs for; undefined for the pairing token. */
  owner: string | undefined;
}

/** Counts live chats against the concurrency limit and lets stop() end them all. */
export class StreamRegistry {
  private readonly live = new Set<LiveStream>();

  get size(): number {
    return this.live.size;
  }

  /**
   * Takes a slot, or returns undefined when `limit` chats are already live. The slot is freed
   * when `run` settles, whatever happens; aborting the controller is how anyone ends the chat.
   */
  tryRun<T>(
    limit: number,
    run: (signal: AbortSignal, controller: AbortController) => Promise<T>,
    owner?: string,
  ): { controller: AbortController; result: Promise<T> } | undefined {
    if (this.live.size >= limit) return undefined;
    const controller = new AbortController();
    const entry: LiveStream = { controller, finished: Promise.resolve(), owner };
    this.live.add(entry);
    // Freed before the result settles, so whoever awaits it can start the next chat at once.
    const result = run(controller.signal, controller).finally(() => this.live.delete(entry));
    entry.finished = result.then(() => undefined, () => undefined);
    return { controller, result };
  }

  /** Live chats of one device. */
  countOf(owner: string): number {
    let n = 0;
    for (const entry of this.live) if (entry.owner === owner) n++;
    return n;
  }

  /** Ends every live chat of one device at once, with a reason its client is told. */
  cancelOwner(owner: string, message: string): number {
    let n = 0;
    for (const entry of [...this.live]) {
      if (entry.owner !== owner) continue;
      entry.controller.abort(new CancelReason(message));
      n++;
    }
    return n;
  }

  /** Cancels every live chat with a reason its client is told, and waits (bounded) for them to end. */
  async cancelAll(message: string, graceMs: number): Promise<void> {
    const entries = [...this.live];
    for (const entry of entries) entry.controller.abort(new CancelReason(message));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(entries.map((e) => e.finished)),
      new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
  }
}
