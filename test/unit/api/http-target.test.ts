// The HTTP handler's fast path for key-value targets must see exactly the path and query that
// WHATWG URL parsing gives, or decline (null) so the full parse runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom } from '../../../src/base/random.js';
import { simpleTarget } from '../../../src/api/http/handler.js';

function agrees(target: string): void {
  const fast = simpleTarget(target);
  if (fast === null) return;
  const url = new URL(target, 'http://localhost');
  assert.equal(fast.path, url.pathname, `path of ${JSON.stringify(target)}`);
  assert.deepEqual([...new URLSearchParams(fast.search)], [...url.searchParams], `query of ${JSON.stringify(target)}`);
}

test('simple targets parse as WHATWG URL parses them', () => {
  const samples = [
    '/v1/kv/a', '/v1/kv', '/v1/kv/a%2Fb?consistency=serializable', '/v1/kv/a/../b', '/v1/kv/%2e%2E/x',
    '//v1/kv/a', '/v1/kv/a\\b', '/v1/kv/a#frag', '/v1/kv/a b', '/v1/kv/"q"<>{}`', '/v1/kv/a?x=1&y=%20+z',
    '/v1/kv/./a', '/v1/kv/é', '/v1/kv/a?b=/.', '/v1/kv/a?', '/v1/kv/a??b=c',
  ];
  for (const target of samples) agrees(target);
  assert.equal(simpleTarget('/v1/kv/a/../b'), null);
  assert.deepEqual(simpleTarget('/v1/kv/k1?consistency=linearizable'), { path: '/v1/kv/k1', search: '?consistency=linearizable' });
  // Random targets over the characters that matter.
  const random = new SeededRandom(11n);
  const alphabet = ['/', '.', '%', '2', 'e', 'E', 'f', '?', '&', '=', '#', '\\', ' ', 'a', '+', '"', '~', '`', '<', '{', '|', '^', "'"];
  for (let i = 0; i < 5_000; i++) {
    let target = '/';
    const length = random.uint32() % 12;
    for (let j = 0; j < length; j++) target += alphabet[random.uint32() % alphabet.length];
    agrees(target);
  }
});
