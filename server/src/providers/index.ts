import { anthropicAdapter } from './anthropic';
import { geminiAdapter } from './gemini';
import { ollamaAdapter } from './ollama';
import { openAiCompatibleAdapter } from './openai-compatible';
import type { AdapterDeps, ChatAdapter, ChatMessage, Piece, PieceKind, ProviderConfig } from './types';

export { describeProvider, validateProviderConfig } from './config';
export { isAbortError, ProviderError } from './errors';
export { clearModelCache } from './models';

/** What each adapter implements: run() only. */
type PushAdapter = Pick<ChatAdapter, 'label' | 'run'>;

/**
 * The adapter for one provider record. The core refuses kind `cloud` with 412 before it gets
 * here, so reaching this with it is a bug in the caller.
 */
export function createAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
  const adapter = pushAdapter(config, deps);
  return {
    label: adapter.label,
    run: adapter.run,
    stream: (messages, signal) => pull(adapter, messages, signal),
  };
}

function pushAdapter(config: ProviderConfig, deps: AdapterDeps): PushAdapter {
  switch (config.kind) {
    case 'ollama':
      return ollamaAdapter(config, deps);
    case 'openai-compatible':
      return openAiCompatibleAdapter(config, deps);
    case 'anthropic':
      return anthropicAdapter(config, deps);
    case 'gemini':
      return geminiAdapter(config, deps);
    case 'cloud':
      throw new Error('createAdapter: the cloud provider has no adapter; the core must answer 412 chat.no_provider');
    default:
      throw new Error(`createAdapter: unknown provider kind "${(config as { kind: unknown }).kind}"`);
  }
}

/**
 * @deprecated The pull-based view of run(), for the chat core's callers of `.stream()` until
 * they call run() themselves; then this goes. Each provider read is handed over as a batch and
 * the provider waits until the consumer took it (backpressure as before); a consumer that stops
 * iterating aborts the provider request.
 */
async function* pull(adapter: PushAdapter, messages: ChatMessage[], signal: AbortSignal): AsyncGenerator<Piece> {
  const queue: Piece[] = [];
  /** Resolves the consumer's wait: a batch is ready, or run() settled. */
  let wake: (() => void) | undefined;
  /** Resolves the producer's flush: the consumer took the batch. */
  let taken: (() => void) | undefined;
  let settled = false;
  let failure: { error: unknown } | undefined;
  const local = new AbortController();
  const onAbort = () => local.abort(signal.reason);
  if (signal.aborted) local.abort(signal.reason);
  else signal.addEventListener('abort', onAbort, { once: true });
  const sink = {
    piece(kind: PieceKind, text: string) {
      queue.push({ kind, text });
    },
    flush(): Promise<void> | undefined {
      if (queue.length === 0) return undefined;
      const ready = new Promise<void>((resolve) => (taken = resolve));
      wake?.();
      return ready;
    },
  };
  const running = adapter.run(messages, local.signal, sink).then(
    () => {
      settled = true;
      wake?.();
    },
    (error: unknown) => {
      settled = true;
      failure = { error };
      wake?.();
    },
  );
  try {
    for (;;) {
      while (queue.length > 0) yield queue.shift()!;
      const release = taken;
      taken = undefined;
      release?.();
      if (settled) {
        if (failure) throw failure.error;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (!settled) {
      local.abort();
      taken?.();
      await running;
    }
  }
}
