import type { CommandOptions } from './workspace';

/**
 * What ends a running command before it ends itself: its time limit or the session's stop.
 * `stop` is called for either (the host's way to kill it); the flags say which, for the result
 * the model is told. `clear()` once the command is over.
 */
export class CommandDeadline {
  timedOut = false;
  stopped = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort = () => {
    this.stopped = true;
    this.stop();
  };

  constructor(
    private readonly options: Pick<CommandOptions, 'signal' | 'timeoutMs'>,
    private readonly stop: () => void,
  ) {
    this.timer = setTimeout(() => {
      this.timedOut = true;
      stop();
    }, options.timeoutMs);
    if (options.signal.aborted) this.onAbort();
    else options.signal.addEventListener('abort', this.onAbort, { once: true });
  }

  clear(): void {
    clearTimeout(this.timer);
    this.options.signal.removeEventListener('abort', this.onAbort);
  }
}
