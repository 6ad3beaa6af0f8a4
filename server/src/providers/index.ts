import { anthropicDialect } from './anthropic';
import { overHttp } from './call';
import { geminiDialect } from './gemini';
import { ollamaDialect } from './ollama';
import { openAiCompatibleDialect } from './openai-compatible';
import { ProviderError } from './errors';
import type { AdapterDeps, AdapterFactories, ChatAdapter, ProviderConfig, ProviderKind, ProviderModule } from './types';

import { describeProvider } from './config';

export { clearModelCache } from './call';
export { describeProvider, validateProviderConfig } from './config';
export { isAbortError, ProviderError } from './errors';

/**
 * `vscode-lm` outside VS Code (deskrelay serve): every chat ends with one error event that says
 * why and what to do, rather than a 412 that would hide which provider is at fault.
 */
export const NEEDS_VSCODE_MESSAGE = (id: string) =>
  `Provider "${id}" is VS Code's language models, which only the DeskRelay extension in VS Code can use; deskrelay serve cannot. Run the relay from VS Code, or make another provider active ("activeProvider" in config.json).`;

/** VS Code's models: the extension brings the adapter (`hosted`); VS Code lists them itself, the server cannot see them. */
const vscodeLmProvider: ProviderModule = {
  adapter: (config) => ({
    label: describeProvider(config),
    run: () => Promise.reject(new ProviderError(NEEDS_VSCODE_MESSAGE(config.id))),
  }),
  listModels: () => Promise.resolve([]),
};

/** The DeskRelay cloud provider: the phone uses it directly; the core refuses it with 412 before any adapter. */
const cloudProvider: ProviderModule = {
  adapter: () => {
    throw new Error('createAdapter: the cloud provider has no adapter; the core must answer 412 chat.no_provider');
  },
  listModels: () => Promise.resolve([]),
};

/** Every provider kind's module: a new kind is its file plus one line here. */
const PROVIDERS: Record<ProviderKind, ProviderModule> = {
  ollama: overHttp(ollamaDialect),
  'openai-compatible': overHttp(openAiCompatibleDialect),
  anthropic: overHttp(anthropicDialect),
  gemini: overHttp(geminiDialect),
  'vscode-lm': vscodeLmProvider,
  cloud: cloudProvider,
};

function moduleOf(config: ProviderConfig): ProviderModule {
  const found = Object.hasOwn(PROVIDERS, config.kind) ? PROVIDERS[config.kind] : undefined;
  if (!found) throw new Error(`unknown provider kind "${(config as { kind: unknown }).kind}"`);
  return found;
}

/**
 * The adapter for one provider record: the host's own (`hosted`, e.g. the extension's
 * `vscode-lm`) when it gives one for the kind, else the server's. The core refuses kind `cloud`
 * with 412 before it gets here, so reaching this with it is a bug in the caller.
 */
export function createAdapter(config: ProviderConfig, deps: AdapterDeps, hosted: AdapterFactories = {}): ChatAdapter {
  const own = hosted[config.kind];
  if (own) return own(config, deps);
  return moduleOf(config).adapter(config, deps);
}

/**
 * The models a provider offers (what a client that lists models shows), through the same
 * ProviderCall as a chat, so an unreachable provider, a refused key or a broken answer is worded
 * exactly as on a stream. The `cloud` and `vscode-lm` kinds have no list the server can see (empty).
 */
export function listModels(config: ProviderConfig, deps: AdapterDeps, signal: AbortSignal = new AbortController().signal): Promise<string[]> {
  return moduleOf(config).listModels(config, deps, signal);
}
