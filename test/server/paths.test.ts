/**
 * PATHS (server/src/protocol) is every path of every door: each route a door registers is one of
 * its entries, and each entry is served (a request with the token answers something other than
 * 404 route.not_found).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Door } from '../../server/src/doors/door';
import { OLLAMA_PREFIX, PATHS } from '../../server/src/protocol';
import { startRelay, type TestRelay } from '../helpers/relay';

/** A route's pattern with its parameters named alike, whatever the router's spelling (`{id}`, `:id`). */
const shape = (path: string) => path.replace(/\{[A-Za-z]+\}|:[A-Za-z]+/g, ':param');

let t: TestRelay;
beforeAll(async () => {
  t = await startRelay();
});
afterAll(async () => {
  await t?.close();
});

describe('PATHS', () => {
  it('names every route every door registers (the Ollama door also under its prefix)', () => {
    const doors = (t.relay as unknown as { doors: readonly Door[] }).doors;
    const registered = new Set(doors.flatMap((d) => d.routes.map((r) => shape(r.path))));
    expect(registered.size).toBeGreaterThan(40);
    const known = new Set(Object.values(PATHS).flatMap((p) => (p.startsWith('/api/') ? [shape(p), shape(`${OLLAMA_PREFIX}${p}`)] : [shape(p)])));
    expect([...registered].filter((p) => !known.has(p))).toEqual([]);
  });

  it('has one name per path, and every one is served', async () => {
    const values = Object.values(PATHS);
    expect(new Set(values).size).toBe(values.length);
    const unserved: string[] = [];
    for (const path of values) {
      const res = await fetch(`${t.url}${path.replace(/:[A-Za-z]+/g, 'x')}`, { headers: { Authorization: `Bearer ${t.token}` } });
      const body = (await res.text().catch(() => '')) || '{}';
      if (res.status === 404 && body.includes('route.not_found')) unserved.push(path);
    }
    expect(unserved).toEqual([]);
  });
});
