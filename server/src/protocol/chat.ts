/** What a chat client sends and the relay's own descriptions of itself (CONTRACT §4, §5); the OpenAI and Ollama doors' paths. */

/** The OpenAI door: its clients parse OpenAI's shapes. */
export const OPENAI_PATHS = /* @__PURE__ */ Object.freeze({
  openAiModels: '/v1/models',
  openAiCompletions: '/v1/chat/completions',
  /** POST multipart audio, answered as OpenAI's transcription (docs/voice.md). */
  transcriptions: '/v1/audio/transcriptions',
});

/** The Ollama door: each `/api/*` path is also served under `OLLAMA_PREFIX`. */
export const OLLAMA_PATHS = /* @__PURE__ */ Object.freeze({
  ollama: '/ollama',
  ollamaVersion: '/api/version',
  ollamaTags: '/api/tags',
  ollamaShow: '/api/show',
  ollamaChat: '/api/chat',
  ollamaGenerate: '/api/generate',
});

/** The Ollama door is also served under this prefix, for apps whose server check wants `GET <url>` to say "Ollama is running". */
export const OLLAMA_PREFIX = '/ollama';


export type Role = 'system' | 'user' | 'assistant';

/** A user message's content given as parts (beyond SPEC: photos, issue 13). */
export type ContentPart = { type: 'text'; text: string } | { type: 'image'; mediaType: string; data: string };

/** One message of a chat request: SPEC's string, or text and image parts. */
export interface WireMessage {
  role: Role;
  content: string | ContentPart[];
}

/** The body of `POST /v1/chat/stream` and the first message on the chat socket. */
export interface ChatRequestBody {
  messages: WireMessage[];
}

/** `GET /v1/remote/info`. */
export interface RemoteInfo {
  service: 'deskrelay';
  version: string;
  hostname: string;
  providerConfigured?: boolean;
  workspaces?: number;
}

/** One provider as a phone sees it: never a key, never `apiKeyEnv`, never a base URL's credentials. */
export interface ProviderView {
  id: string;
  /** The provider kind (CONTRACT §6): `ollama`, `openai-compatible`, `anthropic`, `gemini`, `cloud`. */
  kind: string;
  label: string;
  model: string;
  selectable: boolean;
}

/** `GET /v1/providers/:id/models`: the models the provider lists, in its order. */
export interface ProviderModels {
  models: { id: string }[];
}

/** `GET /v1/providers` and the answer to a switch. `active` and `model` are null when no provider is named. */
export interface ProvidersView {
  active: string | null;
  model: string | null;
  canSwitch: boolean;
  /** True when `POST /v1/audio/transcriptions` has a provider to relay to (issue 29); absent from older relays. */
  transcription?: boolean;
  providers: ProviderView[];
}
