/**
 * Issue 21, finding 8: redaction caught only a secret's prefixes. A provider echoing characters
 * 3-13 of the key got them to the phone, and a tunnel agent printing a 12-character piece of the
 * named tunnel's token got it into the log. Now any run of 8 or more characters of a secret (in
 * any of the forms it is sent in) is taken out, wherever it starts. Both redactors: the
 * providers' (error text that reaches the phone) and the tunnel agents' (their lines, logged).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redact as redactProviderText } from '../../server/src/providers/errors';
import { redact as redactAgentLine } from '../../server/src/tunnel/find';

const KEY = 'sk-proj-Qm7vT2xK9pLw4Rz8Nc3Hb6Yd1Fs5Jg0A';
const TOKEN = 'eyJhIjoiYWNjb3VudC10YWciLCJ0IjoiMWY2ZTQ3ZGEtYjU1NS00NDk1LTg2ZjMtNjJhYjA0ZTVkNDRhIiwicyI6InNlY3JldCJ9';
const redactors: [string, (text: string, secret: string) => string][] = [
  ['provider text', (text, secret) => redactProviderText(text, secret)],
  ['agent line', (text, secret) => redactAgentLine(text, [secret])],
];
const keyChars = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_');
const secretArb = fc.array(keyChars, { minLength: 16, maxLength: 120 }).map((a) => a.join(''));
/** Text around the piece: words, spaces and punctuation a provider or agent would print. */
const prose = fc.stringMatching(/^[ a-zA-Z0-9.,:;"'()=-]{0,60}$/);

describe.each(redactors)('redacting %s', (_name, redact) => {
  it('characters 3-13 of the key, echoed mid-sentence, are gone (the review\'s case)', () => {
    const out = redact(`Incorrect API key provided: ${KEY.slice(3, 14)}. Check it.`, KEY);
    expect(out).toBe('Incorrect API key provided: [redacted]. Check it.');
  });

  it('a 12-character piece from the middle of a tunnel token is gone', () => {
    const piece = TOKEN.slice(40, 52);
    expect(redact(`ERR token=${piece} rejected`, TOKEN)).toBe('ERR token=[redacted] rejected');
  });

  it('any run of 8 or more characters of a secret, anywhere, in any text: none of it survives', () => {
    fc.assert(
      fc.property(secretArb, fc.nat(), fc.nat(), prose, prose, (secret, a, b, before, after) => {
        const start = a % (secret.length - 8);
        const end = start + 8 + (b % (secret.length - start - 7));
        const piece = secret.slice(start, end);
        const out = redact(`${before}${piece}${after}`, secret);
        expect(out).not.toContain(piece);
        expect(out).toContain('[redacted]');
        // And no 8-character window of what is left is a piece of the secret.
        for (let i = 0; i + 8 <= out.length; i++) expect(secret.includes(out.slice(i, i + 8))).toBe(false);
      }),
      { numRuns: 500, seed: 21_08 },
    );
  });

  it('keeps text that shares only 7 characters in a row with the secret', () => {
    const text = `near miss ${KEY.slice(10, 17)} and ${KEY.slice(20, 27)}`;
    expect(redact(text, KEY)).toBe(text);
  });
});

it('provider text: a piece of the key URL-encoded, base64 or JSON-escaped is gone too', () => {
  const key = 'sk-test+DESKRELAY/LEAK"CANARY\\0123456789abcdef';
  for (const form of [encodeURIComponent(key), Buffer.from(key).toString('base64'), JSON.stringify(key).slice(1, -1)]) {
    const piece = form.slice(5, 17);
    expect(redactProviderText(`echo ${piece} end`, key)).toBe('echo [redacted] end');
  }
});
