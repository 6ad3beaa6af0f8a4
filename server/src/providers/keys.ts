import { ProviderCall } from './call';
import { baseUrlSecrets } from './config';
import type { Explain } from './wording';
import { ProviderError } from './errors';
import type { AdapterDeps, ProviderConfig } from './types';

/** The key for a provider, if one is set. A key store that fails is reported, never its error text. */
export async function readKey(config: ProviderConfig, deps: AdapterDeps, label: string): Promise<string | undefined> {
  try {
    return (await deps.keys.get(config)) || undefined;
  } catch {
    throw new ProviderError(`the API key for ${label} could not be read; ${deps.keys.howToSet(config)}`);
  }
}

/**
 * The key for a provider that cannot work without one. A missing key is the user's to fix, so
 * the message says how (the variable or command from KeySource.howToSet).
 */
export async function requireKey(config: ProviderConfig, deps: AdapterDeps, label: string): Promise<string> {
  const key = await readKey(config, deps, label);
  if (!key) throw new ProviderError(`${label} needs an API key and none is set; ${deps.keys.howToSet(config)}`);
  return key;
}

/**
 * The call of a provider: the key (if any) and the base URL's credentials are redacted from
 * every message the call produces, and a refused key is answered with how to set it.
 */
export function keyedCall(
  config: ProviderConfig,
  deps: AdapterDeps,
  label: string,
  signal: AbortSignal,
  key: string | undefined,
  opts: { model?: string; explain?: Explain; keyHint?: boolean } = {},
): ProviderCall {
  return new ProviderCall({
    label,
    idleTimeoutMs: deps.idleTimeoutMs,
    signal,
    secret: key,
    hidden: baseUrlSecrets(config),
    keyHint: opts.keyHint === false ? undefined : deps.keys.howToSet(config),
    model: opts.model ?? config.model,
    explain: opts.explain,
  });
}
