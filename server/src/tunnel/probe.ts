import https from 'node:https';
import { TunnelError } from './errors';

export interface ProbeOptions {
  /**
   * Agent for the probe's HTTPS requests. Production leaves it unset: Node's global agent, the
   * system resolver and Node's CA store, exactly what a phone's request goes through. Tests pass
   * an Agent that dials the stand-in cloudflared on loopback and trusts its test CA.
   */
  agent?: https.Agent;
  /** Pause between attempts (default 1000 ms). */
  intervalMs?: number;
  /** Limit for one attempt (default 10 s). */
  requestTimeoutMs?: number;
}

export interface WaitOptions extends ProbeOptions {
  /** What must answer 200 (the relay's health endpoint): the tunnel knows the relay only through it. */
  path: string;
  timeoutMs: number;
  /** Appended to the give-up message: what the agent's running yet not reaching us usually means. */
  hint?: string;
  signal?: AbortSignal;
  /** Called after every failed attempt with the seconds waited so far and what happened. */
  onProgress?: (elapsedSeconds: number, last: string) => void;
}

/** One GET `<base><path>`: the status code, or the error code when no response came. */
export function probeOnce(baseUrl: string, path: string, opts: ProbeOptions & { signal?: AbortSignal } = {}): Promise<number | string> {
  const url = new URL(path, baseUrl);
  const options: https.RequestOptions = {
    agent: opts.agent,
    timeout: opts.requestTimeoutMs ?? 10_000,
    signal: opts.signal,
    // No keep-alive: an idle probe socket must not hold the CLI's event loop open.
    headers: { accept: 'application/json', connection: 'close', 'user-agent': 'deskrelay-tunnel-probe' },
  };
  return new Promise((resolve) => {
    const failed = (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message);
    try {
      const req = https.get(url, options, (res) => {
        // The status is all the probe wants; a body cut short is not an error worth hearing.
        res.on('error', () => {});
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
      req.on('error', failed);
    } catch (err) {
      failed(err as NodeJS.ErrnoException);
    }
  });
}

/**
 * Polls `<base><path>` until it answers 200. A fresh tunnel answers an error (a quick tunnel 530)
 * or does not resolve yet for a few seconds after its URL is known; every such answer is retried.
 */
export async function waitForHealth(baseUrl: string, opts: WaitOptions): Promise<void> {
  const started = Date.now();
  const interval = opts.intervalMs ?? 1000;
  let last = 'no answer yet';
  for (;;) {
    if (opts.signal?.aborted) throw new TunnelError('The tunnel was stopped while waiting for it to answer.');
    const remaining = Math.max(1000, opts.timeoutMs - (Date.now() - started));
    const result = await probeOnce(baseUrl, opts.path, { ...opts, requestTimeoutMs: Math.min(opts.requestTimeoutMs ?? 10_000, remaining) });
    if (result === 200) return;
    if (opts.signal?.aborted) throw new TunnelError('The tunnel was stopped while waiting for it to answer.');
    last = typeof result === 'number' ? `HTTP ${result}` : result;
    const elapsed = Date.now() - started;
    if (elapsed + interval > opts.timeoutMs) {
      const probed = new URL(opts.path, baseUrl).href;
      throw new TunnelError(
        `The tunnel ${baseUrl} did not answer ${probed} within ${Math.round(opts.timeoutMs / 1000)} s (last answer: ${last}).${opts.hint ? ` ${opts.hint}` : ''}`,
      );
    }
    opts.onProgress?.(Math.round(elapsed / 1000), last);
    await sleep(interval, opts.signal);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
