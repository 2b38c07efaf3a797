// Which keys the router reads off a request (src/router/route-keys.ts): paths, prefix flags, txn
// bodies (both branches, compares, base64 keys), lock and election queues, leases by header.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { routeTarget } from '../../../src/router/route-keys.js';

const target = (path: string, query = '', body = '', headers: Record<string, string> = {}) =>
  routeTarget(path, new URLSearchParams(query), Buffer.from(body), headers);
const starts = (t: ReturnType<typeof target>): string[] => (t.kind === 'keys' ? t.spans.map((s) => `${s.start}${s.end === null ? '' : '*'}`) : ['cell']);

test('keys, prefixes, txns, queues and leases', () => {
  assert.deepEqual(starts(target('/v1/kv/payments/a%20b')), ['/payments/a b']);
  assert.deepEqual(starts(target('/v1/kv/payments/', 'prefix=true')), ['/payments/*']);
  assert.deepEqual(starts(target('/v1/kv/payments/', 'prefix')), ['/payments/*'], 'a bare flag is on, as the cells read it');
  const txn = JSON.stringify({
    compare: [{ key: '/c', target: 'version', op: '==', value: 0 }],
    success: [{ put: { key: '/p', value: 'v' } }], failure: [{ get: { key: '/g/', prefix: true } }, { delete: { key: '/d' } }],
  });
  assert.deepEqual(starts(target('/v1/txn', '', txn)), ['/c', '/p', '/g/*', '/d']);
  const b64 = JSON.stringify({ compare: [], success: [{ put: { key: Buffer.from('/payments/x').toString('base64'), value: '' } }], failure: [] });
  assert.deepEqual(starts(target('/v1/txn', 'encoding=base64', b64)), ['/payments/x']);
  assert.deepEqual(starts(target('/v1/locks/pay/acquire')), ['/locks/pay/*']);
  assert.deepEqual(starts(target('/v1/elections/lead/campaign')), ['/elections/lead/*']);
  assert.deepEqual(starts(target('/v1/watch', 'key=%2Fpayments%2F&prefix=true')), ['/payments/*']);
  assert.deepEqual(starts(target('/v1/leases', '', '{}', { 'baton-namespace': '/locks/pay/' })), ['/locks/pay/']);
  assert.deepEqual(starts(target('/v1/leases')), ['/']);
  assert.deepEqual(starts(target('/v1/cluster/members')), ['cell']);
  assert.throws(() => target('/v1/txn', '', '{'), { code: 'invalid_argument' });
});
