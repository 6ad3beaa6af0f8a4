import { anthropicAdapter } from './anthropic';
import { geminiAdapter } from './gemini';
import { ollamaAdapter } from './ollama';
import { openAiCompatibleAdapter } from './openai-compatible';
import type { AdapterDeps, ChatAdapter, ProviderConfig } from './types';

export { describeProvider, validateProviderConfig } from './config';
export { isAbortError, ProviderError } from './errors';
export { clearModelCache } from './models';

/**
 * The adapter for one provider record. The core refuses kind `cloud` with 412 before it gets
 * here, so reaching this with it is a bug in the caller.
 */
export function createAdapter(config: ProviderConfig, deps: AdapterDeps): ChatAdapter {
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
