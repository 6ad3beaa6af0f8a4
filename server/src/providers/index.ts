import { anthropicAdapter } from './anthropic';
import { geminiAdapter } from './gemini';
import { ollamaAdapter } from './ollama';
import { openAiCompatibleAdapter } from './openai-compatible';
import { ProviderError } from './errors';
import type { AdapterDeps, AdapterFactories, ChatAdapter, ProviderConfig } from './types';

import { describeProvider } from './config';

export { describeProvider, validateProviderConfig } from './config';
export { isAbortError, ProviderError } from './errors';
export { clearModelCache } from './models';

/**
 * The adapter for one provider record: the host's own (`hosted`, e.g. the extension's
 * `vscode-lm`) when it gives one for the kind, else the server's. The core refuses kind `cloud`
 * with 412 before it gets here, so reaching this with it is a bug in the caller.
 */
export function createAdapter(config: ProviderConfig, deps: AdapterDeps, hosted: AdapterFactories = {}): ChatAdapter {
  const own = hosted[config.kind];
  if (own) return own(config, deps);
  switch (config.kind) {
    case 'ollama':
      return ollamaAdapter(config, deps);
    case 'openai-compatible':
      return openAiCompatibleAdapter(config, deps);
    case 'anthropic':
      return anthropicAdapter(config, deps);
    case 'gemini':
      return geminiAdapter(config, deps);
    case 'vscode-lm':
      return needsVsCode(config);
    case 'cloud':
      throw new Error('createAdapter: the cloud provider has no adapter; the core must answer 412 chat.no_provider');
    default:
      throw new Error(`createAdapter: unknown provider kind "${(config as { kind: unknown }).kind}"`);
  }
}

/**
 * `vscode-lm` outside VS Code (deskrelay serve): every chat ends with one error event that says
 * why and what to do, rather than a 412 that would hide which provider is at fault.
 */
export const NEEDS_VSCODE_MESSAGE = (id: string) =>
  `Provider "${id}" is VS Code's language models, which only the DeskRelay extension in VS Code can use; deskrelay serve cannot. Run the relay from VS Code, or make another provider active ("activeProvider" in config.json).`;

function needsVsCode(config: ProviderConfig): ChatAdapter {
  return {
    label: describeProvider(config),
    run: () => Promise.reject(new ProviderError(NEEDS_VSCODE_MESSAGE(config.id))),
  };
}
