// The key-value semantics of api.md, example by example: answer shapes (created, version,
// revision, fencingToken), If-Version/If-Revision, reads at past revisions, compaction, the lock
// transaction from the API page, read-only transactions, and lease key deletion.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactedError, FutureRevisionError, KeyNotFoundError } from '../../../src/base/errors.js';
import { fromUtf8, utf8 } from '../../../src/mvcc/index.js';
import type { Command } from '../../../src/mvcc/index.js';
import { commandCell } from './store-cells.js';

/** A fresh cell holding leases 81 and 82: puts may only name granted leases; grants change no revision. */
function cell(): ReturnType<typeof commandCell> {
  const fresh = commandCell();
  for (const id of [81, 82]) fresh.ok({ type: 'leaseGrant', ttlMs: 10_000, id });
  return fresh;
}

const put = (key: string, value: string, extra: Partial<Command> = {}): Command =>
  ({ type: 'put', key, value: utf8(value), ...extra }) as Command;

test('put, update, delete and re-create: versions, revisions and fencing tokens', () => {
  const { store, run, ok } = cell();
  assert.deepEqual(ok(put('/locks/a', 'w1')), { type: 'put', created: true, version: 1, revision: 1, fencingToken: 1 });
  assert.deepEqual(ok(put('/locks/a', 'w2')), { type: 'put', created: false, version: 2, revision: 2, fencingToken: 1 });
  const refused = run(put('/locks/a', 'w3', { ifVersion: 0 }));
  assert.ok(refused.type === 'failed' && refused.error.code === 'precondition_failed');
  assert.deepEqual(refused.error.details, { current: { version: 2, modRevision: 2 } });
  const stale = run(put('/locks/a', 'w3', { ifRevision: 1 }));
  assert.ok(stale.type === 'failed' && stale.error.code === 'precondition_failed');
  assert.deepEqual(ok(put('/locks/a', 'w3', { ifRevision: 2, ifVersion: 2 })), { type: 'put', created: false, version: 3, revision: 3, fencingToken: 1 });
  assert.deepEqual(ok({ type: 'delete', key: '/locks/a' }), { type: 'delete', deleted: 1, revision: 4 });
  assert.deepEqual(ok({ type: 'delete', key: '/locks/a' }), { type: 'delete', deleted: 0, revision: 4 }, 'no change, no revision');
  assert.deepEqual(ok(put('/locks/a', 'w4', { ifVersion: 0 })), { type: 'put', created: true, version: 1, revision: 5, fencingToken: 5 });
  assert.equal(store.revision, 5);
});

test('reads: single, prefix with limit, keysOnly, countOnly, past revisions, compaction', () => {
  const { store, run, ok } = cell();
  for (const key of ['/s/a', '/s/b', '/s/c', '/t']) ok(put(key, `v${key}`));
  ok(put('/s/a', 'new'));
  ok({ type: 'delete', key: '/s/b' });
  const now = store.range({ type: 'get', key: '/s/', prefix: true, limit: 1 });
  assert.equal(now.count, 2);
  assert.equal(now.more, true);
  assert.equal(fromUtf8(now.kvs[0]?.value ?? new Uint8Array()), 'new');
  assert.deepEqual(store.range({ type: 'get', key: '/s/', prefix: true, countOnly: true }), { type: 'get', revision: 6, count: 2, more: false, kvs: [] });
  assert.equal(store.range({ type: 'get', key: '/s/', prefix: true, keysOnly: true }).kvs[1]?.value.length, 0);
  const past = store.range({ type: 'get', key: '/s/', prefix: true, revision: 4 });
  assert.deepEqual(past.kvs.map((kv) => [kv.key, fromUtf8(kv.value), kv.modRevision]), [
    ['/s/a', 'v/s/a', 1], ['/s/b', 'v/s/b', 2], ['/s/c', 'v/s/c', 3],
  ]);
  assert.throws(() => store.range({ type: 'get', key: '/s/b' }), (e: unknown) => e instanceof KeyNotFoundError && e.details['revision'] === 6);
  assert.throws(() => store.range({ type: 'get', key: '/t', revision: 7 }), FutureRevisionError);
  assert.deepEqual(ok({ type: 'compact', revision: 5 }), { type: 'compact', revision: 6, compactRevision: 5 });
  assert.throws(() => store.range({ type: 'get', key: '/t', revision: 4 }), (e: unknown) => e instanceof CompactedError && e.details['compactRevision'] === 5);
  assert.equal(store.range({ type: 'get', key: '/s/b', revision: 5 }).kvs[0]?.version, 1, 'the compact revision itself stays readable');
  assert.throws(() => store.events({ startRevision: 4, limit: 10 }), CompactedError);
  assert.deepEqual(store.events({ startRevision: 5, limit: 10 }).map((e) => [e.type, e.kv.key, e.revision]), [
    ['put', '/s/a', 5], ['delete', '/s/b', 6],
  ]);
  const again = run({ type: 'compact', revision: 5 });
  assert.ok(again.type === 'failed' && again.error instanceof CompactedError);
});

test('the lock transaction from api.md, and read-only transactions', () => {
  const { store, ok } = cell();
  const acquire = (owner: string): Command => ({
    type: 'txn',
    compare: [{ key: '/locks/report-42', target: 'version', op: '==', value: 0 }],
    success: [{ type: 'put', key: '/locks/report-42', value: utf8(owner), lease: 81 }],
    failure: [{ type: 'get', key: '/locks/report-42' }],
  });
  const first = ok(acquire('worker-17'));
  assert.deepEqual(first, {
    type: 'txn', succeeded: true, revision: 1,
    results: [{ type: 'put', created: true, version: 1, revision: 1, fencingToken: 1 }],
  });
  const second = ok(acquire('worker-18'));
  assert.ok(second.type === 'txn' && !second.succeeded && second.revision === 1);
  const holder = second.results[0];
  assert.ok(holder?.type === 'get');
  assert.equal(fromUtf8(holder.kvs[0]?.value ?? new Uint8Array()), 'worker-17');
  assert.equal(holder.kvs[0]?.lease, 81);
  const readOnly = ok({ type: 'txn', compare: [], success: [{ type: 'get', key: '/nothing' }, { type: 'delete', key: '/nothing' }], failure: [] });
  assert.deepEqual(readOnly, {
    type: 'txn', succeeded: true, revision: 1,
    results: [{ type: 'get', revision: 1, count: 0, more: false, kvs: [] }, { type: 'delete', deleted: 0, revision: 1 }],
  });
  // Inside a txn, a get sees the txn's own earlier writes, and every answer has the txn revision.
  const both = ok({ type: 'txn', compare: [], success: [put('/x', '1') as never, { type: 'get', key: '/x' }], failure: [] });
  assert.ok(both.type === 'txn' && both.revision === 2);
  assert.deepEqual(both.results.map((r) => [r.type, r.revision, r.type === 'get' ? r.count : null]), [['put', 2, null], ['get', 2, 1]]);
  assert.equal(store.revision, 2);
});

test('keys follow their lease; deleting a lease\'s keys is one revision', () => {
  const { store, ok } = cell();
  ok(put('/svc/a', '1', { lease: 81 }));
  ok(put('/svc/b', '1', { lease: 81 }));
  ok(put('/svc/c', '1', { lease: 82 }));
  ok(put('/svc/b', '2', { lease: 82 }));
  ok(put('/svc/d', '1'));
  assert.deepEqual(store.keysOfLease(81), ['/svc/a']);
  assert.deepEqual(store.keysOfLease(82), ['/svc/b', '/svc/c']);
  assert.deepEqual(ok({ type: 'deleteLeaseKeys', lease: 82 }), { type: 'deleteLeaseKeys', deleted: 2, revision: 6 });
  assert.deepEqual(store.keysOfLease(82), []);
  assert.deepEqual(store.range({ type: 'get', key: '/svc/', prefix: true, keysOnly: true }).kvs.map((kv) => kv.key), ['/svc/a', '/svc/d']);
  assert.deepEqual(store.events({ startRevision: 6, limit: 10 }).map((e) => [e.type, e.kv.key, e.revision, e.prevKv?.lease]), [
    ['delete', '/svc/b', 6, 82], ['delete', '/svc/c', 6, 82],
  ]);
});
