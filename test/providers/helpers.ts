import { createServer } from 'node:net';
import { afterEach, beforeEach } from 'vitest';
import { clearModelCache } from '../../server/src/providers';
import type { AdapterDeps, ChatAdapter, ChatMessage, FinishReason, Piece, ProviderConfig } from '../../server/src/providers/types';

/** A key no real provider would issue, easy to spot if it leaks into a message. */
export const FAKE_KEY = 'sk-test-DESKRELAY-LEAK-CANARY-0123456789abcdef';

export const HOW_TO_SET = 'set the TEST_API_KEY environment variable';

export function deps(opts: { key?: string; idleTimeoutMs?: number } = {}): AdapterDeps {
  return {
    keys: {
      get: async () => opts.key,
      howToSet: (p: ProviderConfig) => (p.apiKeyEnv ? `set the ${p.apiKeyEnv} environment variable` : HOW_TO_SET),
    },
    idleTimeoutMs: opts.idleTimeoutMs ?? 2_000,
  };
}

export const HELLO: ChatMessage[] = [{ role: 'user', content: 'Hi there' }];

export interface Outcome {
  pieces: Piece[];
  text: string;
  reasoning: string;
  /** How the reply ended, when it ended normally. */
  finish?: FinishReason;
  error?: Error;
  /** Provider reads flushed (sink.flush calls). */
  flushes: number;
}

/** Runs one reply through run() to its end or its failure; never throws, so tests can look at both. */
export async function run(adapter: ChatAdapter, messages: ChatMessage[] = HELLO, signal: AbortSignal = new AbortController().signal): Promise<Outcome> {
  const pieces: Piece[] = [];
  let error: Error | undefined;
  let finish: FinishReason | undefined;
  let flushes = 0;
  try {
    finish = await adapter.run(messages, signal, {
      piece: (kind, text) => {
        if (text === '') throw new Error('the adapter handed over an empty piece');
        pieces.push({ kind, text });
      },
      flush: () => void flushes++,
    });
  } catch (e) {
    error = e as Error;
  }
  return {
    pieces,
    text: pieces.filter((p) => p.kind === 'text').map((p) => p.text).join(''),
    reasoning: pieces.filter((p) => p.kind === 'reasoning').map((p) => p.text).join(''),
    finish,
    error,
    flushes,
  };
}

/** A loopback port with nothing listening on it. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms))]);
}

/** Waits until `cond` holds, polling; for "the stand-in has received the request". */
export async function until(cond: () => boolean, ms = 2_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

export interface PerTest<S> {
  standIn: S;
  config: ProviderConfig;
  /** How messages name the provider: `<name> at <its URL>`. */
  label: string;
}

/**
 * For each test: a fresh stand-in from `start` (the adapters' model cache cleared) and the config
 * `configFor` makes for its URL, handed to `started`; the stand-in closed after the test.
 */
export function standInPerTest<S extends { url: string; close(): Promise<unknown> }>(
  start: () => Promise<S>,
  configFor: (url: string) => ProviderConfig,
  started: (t: PerTest<S>) => void,
  name = '',
): void {
  let standIn: S | undefined;
  beforeEach(async () => {
    clearModelCache();
    standIn = await start();
    started({ standIn, config: configFor(standIn.url), label: `${name} at ${standIn.url}` });
  });
  afterEach(() => standIn?.close());
}
