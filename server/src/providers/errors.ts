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
/**
 * A run of at least this many characters of a secret's start counts as the secret: providers
 * echo keys cut short ("Incorrect API key provided: sk-proj-abc…"), and a cut text may end
 * inside one.
 */
const MIN_PREFIX = 8;

/**
 * Providers sometimes echo the key they were sent; take it out of anything we pass on: the key
 * as sent, URL-encoded, base64 (Basic auth) and JSON-escaped, and any run of MIN_PREFIX or more
 * characters that opens one of those forms. Redact before cutting a text short, never after: a
 * cut through the key would leave the part before the cut.
 */
export function redact(text: string, ...secrets: (string | undefined)[]): string {
  const forms: string[] = [];
  for (const secret of secrets) if (secret && secret.length >= 4) forms.push(...formsOf(secret));
  if (forms.length === 0) return text;
  let out = '';
  let from = 0;
  for (;;) {
    // The earliest place any form starts at, and there the longest run of any form (the key's
    // plain and JSON-escaped forms share a start; the longer match must win).
    let at = -1;
    let end = -1;
    for (const form of forms) {
      const min = Math.min(MIN_PREFIX, form.length);
      const i = text.indexOf(form.slice(0, min), from);
      if (i === -1 || (at !== -1 && i > at)) continue;
      let e = i + min;
      while (e - i < form.length && e < text.length && text.charCodeAt(e) === form.charCodeAt(e - i)) e++;
      if (i < at || at === -1 || e > end) {
        at = i;
        end = e;
      }
    }
    if (at === -1) return out + text.slice(from);
    out += text.slice(from, at) + REDACTED;
    from = end;
  }
}

function formsOf(secret: string): string[] {
  const forms = new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)]);
  const b64 = Buffer.from(secret, 'utf8').toString('base64');
  forms.add(b64);
  forms.add(b64.replace(/=+$/, ''));
  forms.add(b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''));
  return [...forms];
}
