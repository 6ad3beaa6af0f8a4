/** Route paths as polka registers them: `:name` is one whole, non-empty segment; anything else does not match. */
import { expect, it } from 'vitest';
import { isPattern, routePattern } from '../../server/src/http/route';

it('matches one segment per :name, captured by name', () => {
  expect(routePattern('/v1/providers/:id/models').exec('/v1/providers/my%20box/models')?.groups).toEqual({ id: 'my%20box' });
  expect(routePattern('/v1/agent/sessions/:id/approvals/:callId').exec('/v1/agent/sessions/a1/approvals/c2')?.groups).toEqual({ id: 'a1', callId: 'c2' });
});

it('does not match an empty segment, several segments, a trailing slash or another case', () => {
  for (const path of ['/v1/providers//models', '/v1/providers/a/b/models', '/v1/providers/a/models/', '/V1/providers/a/models']) {
    expect(routePattern('/v1/providers/:id/models').test(path), path).toBe(false);
  }
  expect(routePattern('/v1/health').test('/v1/health/')).toBe(false);
  expect(routePattern('/v1/health').test('/V1/HEALTH')).toBe(false);
});

it('treats the rest of the pattern literally', () => {
  expect(routePattern('/v1/a.b/:id').test('/v1/aXb/1')).toBe(false);
  expect(routePattern('/v1/a+b').test('/v1/aab')).toBe(false);
  expect(isPattern('/v1/devices/:id')).toBe(true);
  expect(isPattern('/v1/devices')).toBe(false);
});

it('never takes a path that has routes of its own', () => {
  const one = routePattern('/v1/conversations/:id', ['/v1/conversations', '/v1/conversations/events', '/v1/devices/codes']);
  expect(one.test('/v1/conversations/events')).toBe(false);
  expect(one.test('/v1/conversations/events2')).toBe(true);
  expect(one.exec('/v1/conversations/c1')?.groups).toEqual({ id: 'c1' });
  // An exact path is never narrowed by the others.
  expect(routePattern('/v1/conversations/events', ['/v1/conversations/events']).test('/v1/conversations/events')).toBe(true);
});
