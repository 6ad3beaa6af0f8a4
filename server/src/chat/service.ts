import { HttpError } from '../errors';
import type { Logger } from '../logger';
import { createAdapter, isAbortError, ProviderError } from '../providers';
import type { ActiveProvider, AdapterFactories, ChatMessage, FinishReason, KeySource, PieceKind, PieceSink, ProviderConfig, ProviderSource, ToolCall, ToolOptions } from '../providers/types';
import { CANCELLED_MESSAGE, CancelReason, INTERNAL_FAILURE_MESSAGE, PROVIDER_CANCELLED_MESSAGE } from './events';

/** One reply may not grow past this (UTF-16 code units): a broken provider cannot exhaust memory. */
export const MAX_REPLY_CHARS = 16 * 1024 * 1024;

export interface ChatServiceOptions {
  providers: ProviderSource;
  keys: KeySource;
  /** A provider silent this long fails the reply (CONTRACT: 5 minutes). */
  providerIdleMs: number;
  maxConcurrentStreams: () => number;
  logger: Logger;
  maxReplyChars?: number;
  /** Adapters the host contributes for kinds the server cannot serve (the extension's `vscode-lm`). */
  adapters?: AdapterFactories;
}

/**
 * How a reply ended: normally with the provider's finish reason (`tool_calls` when the model
 * called tools, delivered through the sink's toolCall), or a failure worded for the client.
 */
export type Ending = { ok: true; finish: FinishReason } | { ok: false; message: string };

/** Where a door receives a reply: the pieces in order (push, one flush per provider read), then exactly one end. */
export interface ReplySink extends PieceSink {
  end(ending: Ending): void;
}

export interface ChatHandle {
  readonly provider: ProviderConfig;
  /** The model that answers (`auto` resolved), once the adapter named it; the sink's `model()` hears it first. */
  readonly model: string | undefined;
  readonly signal: AbortSignal;
  /** Ends the reply now; a CancelReason's message is what the client is told. */
  abort(reason?: unknown): void;
  /** Settles (never rejects) once the sink got its end and the slot is free. */
  readonly done: Promise<Ending>;
}

/** A slot taken ahead of its chat (ChatService.reserve). */
export interface ChatSlot {
  /** Aborted when the relay stops: a door still waiting for its request says so and releases. */
  readonly signal: AbortSignal;
  start(provider: ProviderConfig, messages: ChatMessage[], sink: ReplySink, options?: ToolOptions): ChatHandle;
  /** Gives the slot back unused (no-op once a chat started in it). */
  release(): void;
}

const SWITCH_HINT = 'Switch to a local provider on the desktop (DeskRelay: Select Provider, or "activeProvider" in config.json).';

export function noProviderError(active: Exclude<ActiveProvider, { ok: true }>): HttpError {
  const why =
    active.reason === 'cloud'
      ? `The active provider "${active.id}" is the DeskRelay cloud provider, which the phone uses directly, not through the desktop.`
      : active.reason === 'missing'
        ? `The active provider "${active.id}" is not configured on the desktop.`
        : 'No provider is active on the desktop.';
  return new HttpError(412, 'chat.no_provider', `${why} ${SWITCH_HINT}`);
}

export const tooManyStreams = (limit: number) =>
  new HttpError(429, 'chat.too_many_streams', `The desktop is already serving ${limit} chat streams; try again in a moment.`, { 'Retry-After': '1' });

export const tooManyDeviceStreams = (limit: number) =>
  new HttpError(
    429,
    'chat.too_many_streams',
    `This device already has ${limit} chat stream${limit === 1 ? '' : 's'} open on the desktop; wait for one to finish or stop it.`,
    { 'Retry-After': '1' },
  );

/** One device may hold this many of the `total` slots: never all of them when there are two or more. */
export function perDeviceLimit(total: number): number {
  return total <= 1 ? total : Math.max(1, Math.ceil(total / 2));
}

/**
 * The one chat pipeline every door uses: the concurrency slot, the provider, the adapter run,
 * the reply cap, how the reply ended, and the slot freed on every path. Doors only read their
 * request shape before it and write their wire format from the sink.
 */
export class ChatService {
  private readonly slots = new StreamRegistry();
  /** Set on a device's view (forDevice): its chats count against, and end with, that device. */
  private readonly owner: string | undefined = undefined;

  constructor(private readonly options: ChatServiceOptions) {}

  /**
   * This service as one device's requests see it (issue 26): the same slots, provider and
   * options (the view's prototype is this service), with every chat started through it owned by
   * the device. The funnel hands a device's request a context holding this view, so every door,
   * present or future, counts and ends its chats per device without passing the device along.
   */
  forDevice(device: string): ChatService {
    return Object.create(this, { owner: { value: device } }) as ChatService;
  }

  /** Chats holding a slot right now (detached resumable ones included). */
  get active(): number {
    return this.slots.size;
  }

  /** Chats one device holds right now. */
  activeFor(device: string): number {
    return this.slots.countOf(device);
  }

  /** Ends every chat of a device at once (it was removed); its clients are told `message`. */
  cancelDevice(device: string, message: string): number {
    return this.slots.cancelOwner(device, message);
  }

  /** The provider the next chat uses, asked afresh (a switch takes effect on the next request); 412 when none. */
  provider(): ProviderConfig {
    const active = this.options.providers.active();
    if (!active.ok) throw noProviderError(active);
    return active.config;
  }

  /**
   * Takes a slot (429 when all are taken, thrown before anything is written) and starts the
   * reply. The provider is asked on a later microtask, so a door that writes its headers right
   * after this call shows a live stream even while a cold model loads.
   */
  start(provider: ProviderConfig, messages: ChatMessage[], sink: ReplySink, options?: ToolOptions): ChatHandle {
    return this.reserve().start(provider, messages, sink, options);
  }

  /**
   * Takes a slot now (429 when all are taken) for a chat whose request comes later: the
   * WebSocket counts at its handshake, before its first message. The slot is freed when the
   * chat started in it ends, or by release(); stop() aborts its signal either way.
   */
  reserve(): ChatSlot {
    const limit = this.options.maxConcurrentStreams();
    const owner = this.owner;
    if (owner !== undefined && this.slots.size < limit) {
      const mine = perDeviceLimit(limit);
      if (this.slots.countOf(owner) >= mine) throw tooManyDeviceStreams(mine);
    }
    let settle!: (outcome: Promise<Ending> | undefined) => void;
    const slot = this.slots.tryRun(limit, () => new Promise<Ending | undefined>((resolve) => (settle = resolve)), owner);
    if (!slot) throw tooManyStreams(limit);
    const { controller, result } = slot;
    let used = false;
    return {
      signal: controller.signal,
      start: (provider, messages, sink, options) => {
        if (used) throw new Error('ChatSlot.start: this slot was already used');
        used = true;
        const named: RunState = { model: undefined, ended: false };
        settle(this.run(provider, messages, sink, options, controller.signal, controller, named));
        return {
          provider,
          get model() {
            return named.model;
          },
          signal: controller.signal,
          abort: (reason) => {
            // Doors abort when their client goes away, which is usually after the reply ended:
            // nothing to do then (and an AbortSignal's default reason is a DOMException with a
            // stack to capture).
            if (!named.ended) controller.abort(reason);
          },
          done: result as Promise<Ending>,
        };
      },
      release: () => {
        if (used) return;
        used = true;
        settle(undefined);
      },
    };
  }

  /** Cancels every live chat (the relay is stopping) and waits, bounded, for them to end. */
  cancelAll(message: string, graceMs: number): Promise<void> {
    return this.slots.cancelAll(message, graceMs);
  }

  private async run(
    provider: ProviderConfig,
    messages: ChatMessage[],
    sink: ReplySink,
    options: ToolOptions | undefined,
    signal: AbortSignal,
    controller: AbortController,
    handle: RunState,
  ): Promise<Ending> {
    await Promise.resolve();
    let ending: Ending;
    const named = (name: string) => {
      handle.model = name;
      sink.model?.(name);
    };
    try {
      if (signal.aborted) throw signal.reason;
      const adapter = createAdapter(provider, { keys: this.options.keys, idleTimeoutMs: this.options.providerIdleMs }, this.options.adapters);
      const calls = { made: false };
      const finish = await adapter.run(messages, signal, capped(sink, controller, adapter.label, this.options.maxReplyChars ?? MAX_REPLY_CHARS, named, calls), options);
      if (signal.aborted) throw signal.reason;
      // Some providers end a turn of calls with their ordinary stop (Gemini, Ollama): a client
      // must hear that the model waits for tool results.
      ending = { ok: true, finish: calls.made && finish === 'stop' ? 'tool_calls' : finish };
    } catch (err) {
      ending = { ok: false, message: failureMessage(err, signal, this.options.logger) };
    }
    try {
      sink.end(ending);
    } catch (err) {
      this.options.logger.error(`chat reply could not be ended: ${err instanceof Error ? err.name : typeof err}`);
    }
    handle.ended = true;
    return ending;
  }
}

/** What a running chat tells its handle: the model once named, and that the sink got its end. */
interface RunState {
  model: string | undefined;
  ended: boolean;
}

/** The sink with the reply cap in front: past it the chat is aborted with a message naming the provider. */
function capped(sink: ReplySink, controller: AbortController, label: string, max: number, model: (name: string) => void, calls: { made: boolean }): PieceSink {
  let size = 0;
  const { signal } = controller;
  return {
    model(name: string) {
      if (!signal.aborted && name !== '') model(name);
    },
    piece(kind: PieceKind, text: string) {
      // An adapter may still be inside one read's synchronous pass after an abort.
      if (signal.aborted) return;
      size += text.length;
      if (size > max) {
        controller.abort(new CancelReason(`${label} sent a reply longer than ${max / (1024 * 1024)} MiB; the desktop stopped it there.`));
        return;
      }
      sink.piece(kind, text);
    },
    toolCall(call: ToolCall) {
      if (signal.aborted) return;
      // Calls count toward the cap too (adapters bound each call's arguments, not their number).
      size += call.name.length + JSON.stringify(call.arguments).length;
      if (size > max) {
        controller.abort(new CancelReason(`${label} sent a reply longer than ${max / (1024 * 1024)} MiB; the desktop stopped it there.`));
        return;
      }
      calls.made = true;
      sink.toolCall?.(call);
    },
    flush() {
      return signal.aborted ? undefined : sink.flush();
    },
  };
}

function failureMessage(err: unknown, signal: AbortSignal, logger: Logger): string {
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    return reason instanceof CancelReason ? reason.message : CANCELLED_MESSAGE;
  }
  if (err instanceof ProviderError) return err.message;
  if (isAbortError(err)) return PROVIDER_CANCELLED_MESSAGE;
  // Not a provider's answer but our own bug: say so without details that could hold secrets.
  logger.error(`chat generation failed unexpectedly: ${err instanceof Error ? `${err.name}: ${err.message}` : typeof err}`);
  return INTERNAL_FAILURE_MESSAGE;
}

interface LiveStream {
  controller: AbortController;
  /** Settles when the chat's run does (never rejects once caught in cancelAll). */
  result: Promise<unknown> | undefined;
  /** The device the chat runs for; undefined for the pairing token. */
  owner: string | undefined;
}

const ignore = () => undefined;

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
    const entry: LiveStream = { controller, result: undefined, owner };
    this.live.add(entry);
    // Freed before the result settles, so whoever awaits it can start the next chat at once.
    const result = run(controller.signal, controller).finally(() => this.live.delete(entry));
    entry.result = result;
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
      Promise.all(entries.map((e) => e.result?.then(ignore, ignore))),
      new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
  }
}
