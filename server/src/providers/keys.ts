import { ProviderError } from './errors';
import type { AdapterDeps, ProviderConfig } from './types';

/**
 * The key for a provider that cannot work without one. A missing key is the user's to fix, so
 * the message says how (the variable or command from KeySource.howToSet).
 */
export async function requireKey(config: ProviderConfig, deps: AdapterDeps, label: string): Promise<string> {
  const key = await deps.keys.get(config);
  if (!key) throw new ProviderError(`${label} needs an API key and none is set; ${deps.keys.howToSet(config)}`);
  return key;
}
