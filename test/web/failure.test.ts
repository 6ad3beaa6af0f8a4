/**
 * A failed reply in plain words (web/src/failure.ts): the relay's own lines, as its wording
 * module writes them (server/src/providers/wording.ts, chat/events.ts), become what to do.
 */
import { describe, expect, it } from 'vitest';
import { describeFailure } from '../../web/src/failure';
import { describeNetworkFailure, describeHttpFailure } from '../../server/src/providers/wording';
import { STOPPING_MESSAGE } from '../../server/src/chat/events';

describe('describeFailure', () => {
  it("a provider that is not running: \"Your computer can't reach Ollama\", with the relay's line kept", () => {
    const raw = describeNetworkFailure('Ollama at http://127.0.0.1:11434', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'connect');
    expect(describeFailure(raw)).toEqual({ plain: "Your computer can't reach Ollama. Start it, then tap Retry.", raw, retry: true, code: '' });
    expect(describeFailure('LM Studio at http://127.0.0.1:1234 is not reachable (ETIMEDOUT)').plain).toBe("Your computer can't reach LM Studio. Start it, then tap Retry.");
  });

  it('a provider cut mid-reply, rate-limiting, or failing: named, with Retry', () => {
    const cut = describeNetworkFailure('Ollama at http://127.0.0.1:11434', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'body');
    expect(describeFailure(cut).plain).toBe('Ollama stopped in the middle of the reply. Tap Retry.');
    const limited = describeHttpFailure({ label: 'Anthropic', keyed: true }, { status: 429, said: 'rate_limit_error', body: null }, '20');
    expect(describeFailure(limited).plain).toBe('Anthropic is busy right now. Wait a moment, then tap Retry.');
    const down = describeHttpFailure({ label: 'Gemini', keyed: true }, { status: 503, said: '', body: null }, null);
    expect(describeFailure(down).plain).toBe('Gemini had a problem answering. Tap Retry.');
    const broken = describeHttpFailure({ label: 'OpenAI-compatible server at http://127.0.0.1:8000', keyed: false }, { status: 500, said: '', body: null }, null);
    expect(describeFailure(broken).plain).toBe('OpenAI-compatible server had a problem answering. Tap Retry.');
  });

  it('the relay itself: stopped, busy (429), unreachable, a cut connection', () => {
    expect(describeFailure(STOPPING_MESSAGE).plain).toBe('DeskRelay on your computer stopped. Start it again, then tap Retry.');
    expect(describeFailure('The desktop relay is shutting down.', 'server.stopping').retry).toBe(true);
    expect(describeFailure('Too many replies at once.', 'chat.too_many_streams').plain).toMatch(/^Your computer is already writing other replies/);
    expect(describeFailure('keeps dropping', 'network').plain).toMatch(/^Your phone can't reach your computer/);
    expect(describeFailure('lost', 'dropped').plain).toMatch(/^The connection to your computer was lost/);
  });

  it('no Retry where sending the same again cannot help: a refused token, a body too large', () => {
    expect(describeFailure('x', 'auth.invalid_token').retry).toBe(false);
    expect(describeFailure('The body is larger than 10 MiB', 'request.body_too_large')).toMatchObject({ retry: false, plain: expect.stringContaining('Remove a photo') });
  });

  it('a refusal already written for people is shown as it is', () => {
    const raw = 'No provider is usable. Switch to a local provider on the desktop.';
    expect(describeFailure(raw, 'chat.no_provider')).toMatchObject({ plain: raw, retry: true });
  });
});
