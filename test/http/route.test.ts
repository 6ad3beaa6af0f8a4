/** Route path parameters: `{name}` is one whole, non-empty, decoded segment; anything else does not match. */
import { expect, it } from 'vitest';
import { isPattern, pathParams } from '../../server/src/http/route';

it('matches one segment per {name}, decoded', () => {
  expect(pathParams('/v1/providers/{id}/models', '/v1/providers/my%20box/models')).toEqual({ id: 'my box' });
  expect(pathParams('/v1/agent/sessions/{id}/events', '/v1/agent/sessions/a1/events')).toEqual({ id: 'a1' });
});

it('does not match an empty segment, several segments, a trailing slash, another case or a malformed escape', () => {
  for (const path of ['/v1/providers//models', '/v1/providers/a/b/models', '/v1/providers/a/models/', '/V1/providers/a/models', '/v1/providers/%E0%A4%A/models']) {
    expect(pathParams('/v1/providers/{id}/models', path), path).toBeUndefined();
  }
});

it('treats the rest of the pattern literally', () => {
  expect(pathParams('/v1/a.b/{id}', '/v1/aXb/1')).toBeUndefined();
  expect(isPattern('/v1/devices/{id}')).toBe(true);
  expect(isPattern('/v1/devices')).toBe(false);
});
