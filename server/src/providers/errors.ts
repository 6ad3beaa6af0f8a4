import { redactSecrets } from '../redact';

/**
 * A provider failure whose message is safe to show a person: it names the provider and where it
 * is, says what to do, and never holds an API key.
 */
export class ProviderError extends Error {
  override readonly name = 'ProviderError';
}

/**
 * True for the abort that follows the caller's own signal (the phone went away). The core must
 * not report it as a provider failure.
 */
export function isAbortError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'AbortError';
}

export function abortError(): Error {
  return new DOMException('The chat request was aborted', 'AbortError');
}

/**
 * Providers sometimes echo the key they were sent; take it out of anything we pass on: the key
 * as sent, URL-encoded, base64 (Basic auth) and JSON-escaped, and any run of 8 or more
 * characters of one of those forms (redact.ts). Redact before cutting a text short, never after:
 * a cut through the key would leave the part before the cut.
 */
export function redact(text: string, ...secrets: (string | undefined)[]): string {
  const forms: string[] = [];
  for (const secret of secrets) if (secret && secret.length >= 4) forms.push(...formsOf(secret));
  return redactSecrets(text, forms);
}

function formsOf(secret: string): string[] {
  const forms = new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)]);
  const b64 = Buffer.from(secret, 'utf8').toString('base64');
  forms.add(b64);
  forms.add(b64.replace(/=+$/, ''));
  forms.add(b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''));
  return [...forms];
}
