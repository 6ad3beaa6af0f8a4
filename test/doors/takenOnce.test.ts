/**
 * The set of signed statements the relay takes once (registration proofs, a phone's signed
 * actions): a statement is refused while it is remembered, forgotten once its issuedAt leaves
 * the 5-minute window, and the set never holds more than its bound: a token's holder sending
 * fresh signatures cannot make the relay's memory grow without end.
 */
import { describe, expect, it } from 'vitest';
import { fresh, issuedAtMs, TakenOnce } from '../../server/src/doors/takenOnce';
import { PROOF_WINDOW_MS } from '../../server/src/protocol';

describe('TakenOnce', () => {
  it('takes a statement once while it is in the window, and again once it has left it', () => {
    const once = new TakenOnce();
    const at = Date.parse('2026-11-29T05:00:00.000Z');
    expect(once.take('a', at, at)).toBe('taken');
    expect(once.take('a', at, at + 1000)).toBe('used');
    expect(once.take('b', at, at + 1000)).toBe('taken');
    // Past the window the statement is stale anyway (fresh() refuses it); the set lets it go.
    expect(fresh(at, at + PROOF_WINDOW_MS + 1)).toBe(false);
    expect(once.take('a', at, at + PROOF_WINDOW_MS + 1)).toBe('taken');
  });

  it('holds at most its bound: past it a new statement is refused as full, and room comes back as the oldest leave the window', () => {
    const once = new TakenOnce(3);
    const at = Date.parse('2026-11-29T05:00:00.000Z');
    for (const id of ['a', 'b', 'c']) expect(once.take(id, at, at)).toBe('taken');
    expect(once.take('d', at + 10, at + 10)).toBe('full');
    expect(once.take('a', at, at + 10)).toBe('used');
    expect(once.take('d', at + 10, at + PROOF_WINDOW_MS + 1)).toBe('taken');
  });

  it('reads issuedAt as the phone writes it (Date.toISOString) and nothing else', () => {
    expect(issuedAtMs('2026-11-29T05:00:00.123Z')).toBe(Date.parse('2026-11-29T05:00:00.123Z'));
    expect(issuedAtMs('2026-11-29T05:00:00Z')).toBe(Date.parse('2026-11-29T05:00:00Z'));
    for (const bad of ['2026-11-29 05:00:00', '2026-11-29T05:00:00+01:00', 1764392400000, undefined, '']) expect(issuedAtMs(bad)).toBeNaN();
  });
});
