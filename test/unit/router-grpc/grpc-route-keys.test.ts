// Which keys the router's gRPC relay reads off an etcd call (src/router-grpc/grpc-route-keys.ts):
// the facade's key mapping (etcd K is Baton '/' + K), ranges and prefixes, every key of a txn
// (nested ones included), lock and election queues, leases and per-cell calls, and unreadable
// keys sent to the root's cell (which refuses them in its own words).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { grpcRoute, leaseSpan } from '../../../src/router-grpc/grpc-route-keys.js';

const b = (text: string): Buffer => Buffer.from(text);
const starts = (route: ReturnType<typeof grpcRoute>): string[] =>
  route.kind === 'keys' ? route.spans.map((s) => `${s.start}${s.end === null ? '' : `..${Buffer.from(s.end).toString()}`}`) : [route.kind];

test('KV calls: single keys, prefixes, [key, range_end) and every key of a txn', () => {
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/Put', { key: b('alpha/k') }, undefined)), ['/alpha/k']);
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/Range', { key: b('alpha/'), range_end: b('alpha0') }, undefined)), ['/alpha/../alpha0']);
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/Range', { key: b('a'), range_end: b('c') }, undefined)), ['/a../c']);
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/DeleteRange', { key: b('\0'), range_end: b('\0') }, undefined)), ['/..0'], 'every key');
  const txn = {
    compare: [{ key: b('c') }],
    success: [{ request_put: { key: b('p') } }, { request_txn: { compare: [], success: [{ request_delete_range: { key: b('d') } }], failure: [] } }],
    failure: [{ request_range: { key: b('g/'), range_end: b('g0') } }],
  };
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/Txn', txn, undefined)), ['/c', '/p', '/d', '/g/../g0']);
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/Txn', { compare: [], success: [], failure: [] }, undefined)), ['/'], 'a txn of no key: the root');
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/Compact', { revision: '3' }, undefined)), ['cell']);
});

test('locks, elections, leases, members and unreadable keys', () => {
  assert.deepEqual(starts(grpcRoute('/v3lockpb.Lock/Lock', { name: b('pay') }, undefined)), ['/locks/pay/../locks/pay0']);
  assert.deepEqual(starts(grpcRoute('/v3lockpb.Lock/Unlock', { key: b('locks/pay/000000000007') }, undefined)), ['/locks/pay/000000000007']);
  assert.deepEqual(starts(grpcRoute('/v3electionpb.Election/Campaign', { name: b('lead') }, undefined)), ['/elections/lead/../elections/lead0']);
  assert.deepEqual(starts(grpcRoute('/v3electionpb.Election/Resign', { leader: { name: b('lead') } }, undefined)), ['/elections/lead/../elections/lead0']);
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.Lease/LeaseGrant', { TTL: '5' }, undefined)), ['lease']);
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.Cluster/MemberList', {}, undefined)), ['router']);
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.Cluster/MemberList', {}, 'cell-2')), ['cell'], 'baton-cell asks that cell');
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.Maintenance/Status', {}, undefined)), ['cell']);
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/Put', { key: b('') }, undefined)), ['cell'], 'no key: the root cell refuses it');
  assert.deepEqual(starts(grpcRoute('/etcdserverpb.KV/Put', { key: b('a/../b') }, undefined)), ['cell']);
  assert.deepEqual(starts(grpcRoute('/v3lockpb.Lock/Lock', { name: Buffer.from([0xff]) }, undefined)), ['cell'], 'a name that is not UTF-8');
  assert.deepEqual(leaseSpan(undefined), { start: '/', end: null });
  assert.deepEqual(leaseSpan('/alpha/'), { start: '/alpha/', end: null });
});
