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

const REDACTED = '[redacted]';

/** Providers sometimes echo the key they were sent; take it out of anything we pass on. */
export function redact(text: string, secret: string | undefined): string {
  if (!secret || secret.length < 4) return text;
  return text.split(secret).join(REDACTED);
}
