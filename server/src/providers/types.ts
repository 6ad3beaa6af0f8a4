/** OpenAI-style roles: what every client sends, whatever the provider needs. `tool` carries a tool's result. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A tool the model may call: its name, what it does, and its arguments as a JSON Schema object. */
export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON Schema object describing the arguments. */
  parameters: Record<string, unknown>;
}

/** Whether the model may (`auto`), may not (`none`), must (`required`) call a tool, or must call the named one. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** One call the model made: the provider's id for it (made up when the provider has none), the tool, its parsed arguments. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** What a chat may offer the model besides its messages. */
export interface ToolOptions {
  tools?: ToolSpec[];
  toolChoice?: ToolChoice;
}

/** The image types a chat request may carry (the ones every supported provider accepts). */
export const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif'] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

/** A photo in a message: its bytes as standard base64 (no `data:` prefix). Never logged. */
export interface ChatImage {
  mediaType: ImageMediaType;
  data: string;
}

/**
 * One message. `content` is its text (text parts joined); `images` the photos it carries, in
 * order. Adapters send the images before the text, each in its provider's own form.
 */
export interface ChatMessage {
  role: Role;
  content: string;
  images?: ChatImage[];
  /** Assistant turns: the tools the model called (its `content` may then be ''). */
  toolCalls?: ToolCall[];
  /** Tool turns: the call this result answers; `content` is the result text. */
  toolCallId?: string;
  /** Tool turns: the tool that produced the result. */
  name?: string;
}

/**
 * A piece of a provider's reply. Adapters report reasoning separately from answer text;
 * the chat service alone turns reasoning into `<think>` tags, so every provider looks the
 * same to a client.
 */
export interface Piece {
  kind: 'text' | 'reasoning';
  text: string;
}

/**
 * `vscode-lm` is VS Code's own language models (`vscode.lm`): only the extension serves it, through
 * an adapter it contributes (AdapterFactories); the server itself never imports `vscode`.
 */
export type ProviderKind = 'ollama' | 'openai-compatible' | 'anthropic' | 'gemini' | 'vscode-lm' | 'cloud';

export const PROVIDER_KINDS: readonly ProviderKind[] = ['ollama', 'openai-compatible', 'anthropic', 'gemini', 'vscode-lm', 'cloud'];

/** One provider record, as in CONTRACT §6. Never holds an API key. */
export interface ProviderConfig {
  id: string;
  kind: ProviderKind;
  baseUrl?: string;
  model?: string;
  /** Standalone CLI: the environment variable holding the key. */
  apiKeyEnv?: string;
  /** Anthropic requires max_tokens; others pass it on when set. */
  maxTokens?: number;
  /** The model's context length in tokens, when the provider does not say it (the agent fits its conversation to it). */
  contextLength?: number;
}

/** Where API keys come from: the environment (CLI) or SecretStorage (extension). */
export interface KeySource {
  get(provider: ProviderConfig): Promise<string | undefined>;
  /** How the user sets the key, for the error message when it is missing. */
  howToSet(provider: ProviderConfig): string;
}

/** The provider the next request should use; asked afresh on every request. */
export type ActiveProvider =
  | { ok: true; config: ProviderConfig }
  | { ok: false; reason: 'none' | 'missing' | 'cloud'; id?: string };

/** Who turns speech into text (issue 29): a provider record's id and the model it runs. */
export interface TranscriptionChoice {
  provider: string;
  model: string;
}

export interface ProviderSource {
  active(): ActiveProvider;
  /**
   * The provider that transcribes speech for `POST /v1/audio/transcriptions` (`"transcription"`
   * in config.json, `deskrelay.transcription` in VS Code); undefined when none is named.
   */
  transcription?(): TranscriptionChoice | undefined;
  /** Every provider record, in the configured order (for `GET /v1/providers`); invalid entries left out. */
  list?(): ProviderConfig[];
  /** The id the desktop names as active, even when it is missing or unusable ('' for none). */
  activeId?(): string;
  /** True when the desktop lets a phone switch the active provider (`allowPhoneProviderSwitch`). */
  canSwitch?(): boolean;
  /**
   * Makes `id` the active provider (and `model` its model when given), exactly as switching on
   * the desktop does: the settings or the config file are written, and the next chat uses it.
   * The caller has checked canSwitch(), that `id` is listed and not `cloud`.
   */
  switchTo?(id: string, model?: string): Promise<void>;
}

export interface AdapterDeps {
  keys: KeySource;
  /** Give up when the provider sends no bytes for this long (CONTRACT: 5 minutes). */
  idleTimeoutMs: number;
}

/** Makes the adapter for one provider record of a kind the host serves itself. */
export type AdapterFactory = (config: ProviderConfig, deps: AdapterDeps) => ChatAdapter;

/**
 * Adapters a host contributes for kinds the server cannot serve on its own: the VS Code
 * extension gives `vscode-lm`. createAdapter asks these first.
 */
export type AdapterFactories = Partial<Record<ProviderKind, AdapterFactory>>;

/**
 * How a reply ended normally: `stop` (the model finished), `length` (cut at the token limit),
 * `content_filter` (the provider's filter ended it), `tool_calls` (the model called tools and
 * waits for their results), or the provider's own word for anything
 * else. A reply that ends any other way is a failure (a ProviderError), not a finish.
 */
export type FinishReason = 'stop' | 'length' | 'content_filter' | 'tool_calls' | (string & {});

/**
 * Where an adapter delivers a reply, push-style: every piece one provider read holds is handed
 * over synchronously, then `flush()` once. No promise per token.
 */
export interface PieceSink {
  /** One piece of the reply, in provider order; never empty. May throw to end the reply (a cap was hit). */
  piece(kind: PieceKind, text: string): void;
  /**
   * The pieces of one provider read were delivered. A promise means the consumer is not keeping
   * up: read nothing more from the provider until it settles (a slow client paces the provider).
   */
  flush(): void | Promise<void>;
  /**
   * The model that answers, once the adapter knows it (`auto` resolved), before the first piece.
   * Optional for the consumer; adapters call it at most once.
   */
  model?(name: string): void;
  /**
   * One tool call of the reply, delivered once its arguments are whole (in provider order among
   * the pieces). May throw like piece(). Optional for the consumer: a door that offered no tools
   * gets none.
   */
  toolCall?(call: ToolCall): void;
}

export type PieceKind = Piece['kind'];

/** A provider adapter streams one reply. Errors it throws carry user-facing messages. */
/**
 * What one provider kind's module gives the relay: its chat adapter and its model list, each
 * with the kind's own endpoints and headers (nothing outside the module switches on the kind).
 */
export interface ProviderModule {
  adapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter;
  /** The provider's model ids in the provider's order; rejects with a ProviderError worded for the user. */
  listModels(config: ProviderConfig, deps: AdapterDeps, signal: AbortSignal): Promise<string[]>;
}

export interface ChatAdapter {
  /** Provider name and where it is, e.g. `Ollama at http://127.0.0.1:11434`. */
  readonly label: string;
  /**
   * Streams one reply into `sink`; resolves with how it finished once the provider's end marker
   * arrived; rejects with a ProviderError (or an AbortError once `signal` aborted).
   */
  run(messages: ChatMessage[], signal: AbortSignal, sink: PieceSink, options?: ToolOptions): Promise<FinishReason>;
}
