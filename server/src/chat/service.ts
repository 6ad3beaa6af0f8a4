import { providerContextLength } from '../providers/contextLength';
import type { Logger } from '../logger';
import { createAdapter, isAbortError, ProviderError } from '../providers';
import type { ActiveProvider, AdapterFactories, ChatAdapter, ChatMessage, FinishReason, KeySource, PieceKind, PieceSink, ProviderConfig, ProviderSource, ToolCall, ToolOptions } from '../providers/types';
import { ChatError } from './errors';
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

export function noProviderError(active: Exclude<ActiveProvider, { ok: true }>): ChatError {
  const why =
    active.reason === 'cloud'
      ? `The active provider "${active.id}" is the DeskRelay cloud provider, which the phone uses directly, not through the desktop.`
      : active.reason === 'missing'
        ? `The active provider "${active.id}" is not configured on the desktop.`
        : 'No provider is active on the desktop.';
  return new ChatError('chat.no_provider', `${why} ${SWITCH_HINT}`);
}

export const tooManyStreams = (limit: number) =>
  new ChatError('chat.too_many_streams', `The desktop is already serving ${limit} chat streams; try again in a moment.`, 1);

export const tooManyDeviceStreams = (limit: number) =>
  new ChatError('chat.too_many_streams', `This device already has ${limit} chat stream${limit === 1 ? '' : 's'} open on the desktop; wait for one to finish or stop it.`, 1);

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
  private readonly adapters = new WeakMap<ProviderConfig, ChatAdapter>();
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
    return this.slots.cancelOwner(device, message).length;
  }

  /** cancelDevice, then waits (at most `graceMs`) for those chats to have written their end; resolves to how many there were. */
  async endDevice(device: string, message: string, graceMs: number): Promise<number> {
    const chats = this.slots.cancelOwner(device, message);
    if (chats.length === 0) return 0;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(chats.map((c) => c.done)), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    return chats.length;
  }

  /** The model's context length in tokens: what its provider says, else the record's `contextLength`; undefined when neither says. */
  async contextLength(provider: ProviderConfig, signal: AbortSignal): Promise<number | undefined> {
    const key = await this.options.keys.get(provider).catch(() => undefined);
    return (await providerContextLength(provider, key, signal)) ?? provider.contextLength;
  }

  /** The provider the next chat uses, asked afresh (a switch takes effect on the next request); a ChatError (chat.no_provider) when none. */
  provider(): ProviderConfig {
    const active = this.options.providers.active();
    if (!active.ok) throw noProviderError(active);
    return active.config;
  }

  /**
   * One adapter per provider record. A record stays the same object until its settings change
   * (the CLI re-reads config.json only when it changed), so a chat does not build its adapter
   * anew; a changed record is a new object and gets a new adapter.
   */
  private adapterFor(provider: ProviderConfig): ChatAdapter {
    let adapter = this.adapters.get(provider);
    if (!adapter) {
      adapter = createAdapter(provider, { keys: this.options.keys, idleTimeoutMs: this.options.providerIdleMs }, this.options.adapters);
      this.adapters.set(provider, adapter);
    }
    return adapter;
  }

  /**
   * Takes a slot (a ChatError, chat.too_many_streams, when all are taken, thrown before anything is written) and starts the
   * reply. The provider is asked on a later microtask, so a door that writes its headers right
   * after this call shows a live stream even while a cold model loads.
   */
  start(provider: ProviderConfig, messages: ChatMessage[], sink: ReplySink, options?: ToolOptions): ChatHandle {
    return this.reserve().start(provider, messages, sink, options);
  }

  /**
   * Takes a slot now (chat.too_many_streams when all are taken) for a chat whose request comes later: the
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
    if (this.slots.size >= limit) throw tooManyStreams(limit);
    const chat = new LiveChat(this.slots, owner, this);
    this.slots.add(chat);
    return chat;
  }

  /** Cancels every live chat (the relay is stopping) and waits, bounded, for them to end. */
  cancelAll(message: string, graceMs: number): Promise<void> {
    return this.slots.cancelAll(message, graceMs);
  }

  /**
   * Runs a started chat to its end; never rejects: the sink gets its one end, then the slot is
   * freed. Called by LiveChat.start only (not private so that LiveChat can hold the service
   * rather than a closure over it).
   */
  async run(chat: LiveChat, messages: ChatMessage[], options: ToolOptions | undefined): Promise<void> {
    await Promise.resolve();
    const { signal } = chat.controller;
    let ending: Ending;
    try {
      if (signal.aborted) throw signal.reason;
      const adapter = this.adapterFor(chat.provider);
      const sink = new CappedSink(chat, adapter.label, this.options.maxReplyChars ?? MAX_REPLY_CHARS);
      const finish = await adapter.run(messages, signal, sink, options);
      if (signal.aborted) throw signal.reason;
      // Some providers end a turn of calls with their ordinary stop (Gemini, Ollama): a client
      // must hear that the model waits for tool results.
      ending = { ok: true, finish: sink.calledTools && finish === 'stop' ? 'tool_calls' : finish };
    } catch (err) {
      ending = { ok: false, message: failureMessage(err, signal, this.options.logger) };
    }
    try {
      chat.sink.end(ending);
    } catch (err) {
      this.options.logger.error(`chat reply could not be ended: ${err instanceof Error ? err.name : typeof err}`);
    }
    chat.finish(ending);
  }
}

/**
 * One chat from its slot to its end, as one object: the slot a door reserves (ChatSlot) and the
 * handle it holds once started (ChatHandle). A relay holding a thousand idle streams holds a
 * thousand of these, so they are plain fields rather than closures over each other.
 */
class LiveChat implements ChatSlot, ChatHandle {
  readonly controller = new AbortController();
  provider!: ProviderConfig;
  sink!: ReplySink;
  model: string | undefined = undefined;
  /**
   * `done`, made when first asked for: a streamed door never asks (it returns once its chat
   * started), and a promise made for every chat held its resolving functions and their context
   * for as long as the chat lived (per-stream heap, bench/NOTES.md).
   */
  private donePromise: Promise<Ending> | undefined = undefined;
  private settle: ((ending: Ending | undefined) => void) | undefined = undefined;
  private ending: Ending | undefined = undefined;
  private used = false;
  private ended = false;

  constructor(
    private readonly registry: StreamRegistry,
    readonly owner: string | undefined,
    /** The service (or a device's view of it) whose run() this chat runs in. */
    private readonly service: ChatService,
  ) {}

  /** Settles with the ending, or undefined for a slot released unused; never rejects. */
  get done(): Promise<Ending> {
    if (!this.donePromise) {
      this.donePromise = this.ended
        ? Promise.resolve(this.ending as Ending)
        : (new Promise<Ending | undefined>((resolve) => (this.settle = resolve)) as Promise<Ending>);
    }
    return this.donePromise;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  start(provider: ProviderConfig, messages: ChatMessage[], sink: ReplySink, options?: ToolOptions): ChatHandle {
    if (this.used) throw new Error('ChatSlot.start: this slot was already used');
    this.used = true;
    this.provider = provider;
    this.sink = sink;
    void this.service.run(this, messages, options);
    return this;
  }

  release(): void {
    if (this.used) return;
    this.used = true;
    this.finish(undefined);
  }

  abort(reason?: unknown): void {
    // Doors abort when their client goes away, which is usually after the reply ended: nothing
    // to do then (and an AbortSignal's default reason is a DOMException with a stack to capture).
    if (!this.ended) this.controller.abort(reason);
  }

  /** The slot is freed before `done` settles, so whoever awaits it can start the next chat at once. */
  finish(ending: Ending | undefined): void {
    this.ended = true;
    this.ending = ending;
    this.registry.delete(this);
    this.settle?.(ending);
  }
}

/** The sink an adapter writes to: the reply cap in front of the door's sink; past it the chat is aborted with a message naming the provider. */
class CappedSink implements PieceSink {
  private size = 0;
  /** The model called a tool in this reply. */
  calledTools = false;

  constructor(
    private readonly chat: LiveChat,
    private readonly label: string,
    private readonly max: number,
  ) {}

  model(name: string): void {
    if (this.chat.signal.aborted || name === '') return;
    this.chat.model = name;
    this.chat.sink.model?.(name);
  }

  piece(kind: PieceKind, text: string): void {
    // An adapter may still be inside one read's synchronous pass after an abort.
    if (this.chat.signal.aborted || this.over(text.length)) return;
    this.chat.sink.piece(kind, text);
  }

  toolCall(call: ToolCall): void {
    // Calls count toward the cap too (adapters bound each call's arguments, not their number).
    if (this.chat.signal.aborted || this.over(call.name.length + JSON.stringify(call.arguments).length)) return;
    this.calledTools = true;
    this.chat.sink.toolCall?.(call);
  }

  flush(): void | Promise<void> {
    return this.chat.signal.aborted ? undefined : this.chat.sink.flush();
  }

  private over(chars: number): boolean {
    this.size += chars;
    if (this.size <= this.max) return false;
    this.chat.controller.abort(new CancelReason(`${this.label} sent a reply longer than ${this.max / (1024 * 1024)} MiB; the desktop stopped it there.`));
    return true;
  }
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

/** Counts live chats against the concurrency limit and lets stop() end them all. */
export class StreamRegistry {
  private readonly live = new Set<LiveChat>();

  get size(): number {
    return this.live.size;
  }

  add(chat: LiveChat): void {
    this.live.add(chat);
  }

  delete(chat: LiveChat): void {
    this.live.delete(chat);
  }

  /** Live chats of one device. */
  countOf(owner: string): number {
    let n = 0;
    for (const entry of this.live) if (entry.owner === owner) n++;
    return n;
  }

  /** Ends every live chat of one device at once, with a reason its client is told. */
  cancelOwner(owner: string, message: string): LiveChat[] {
    const ended: LiveChat[] = [];
    for (const entry of [...this.live]) {
      if (entry.owner !== owner) continue;
      entry.controller.abort(new CancelReason(message));
      ended.push(entry);
    }
    return ended;
  }

  /** Cancels every live chat with a reason its client is told, and waits (bounded) for them to end. */
  async cancelAll(message: string, graceMs: number): Promise<void> {
    const entries = [...this.live];
    for (const entry of entries) entry.controller.abort(new CancelReason(message));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(entries.map((e) => e.done)),
      new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
  }
}
