// The replicated lease table inside the MVCC store: grants (ids chosen by the state machine, TTL
// bounds refused rather than adjusted), revocation as one revision, checkpoints that change no
// revision, attach-on-put validation and limits (also all-or-nothing inside a txn), and that the
// table is state: in hash(), carried by snapshots, identical on replicas fed in any batching.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand, utf8 } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command, MvccLimits } from '../../../src/mvcc/index.js';
import { commandCell } from '../mvcc/store-cells.js';

const limits: MvccLimits = { ...defaultMvccLimits, leasesMax: 4, leaseKeysMax: 3 };

function entries(ops: readonly Command[]): Entry[] {
  return ops.map((op, i) => ({
    index: i + 1,
    term: 1,
    type: EntryType.normal,
    data: encodeCommand({ proposedAtMs: 1_000 + i, op }, limits),
  }));
}

function errorCode(outcome: ApplyOutcome): string {
  assert.equal(outcome.type, 'failed', JSON.stringify(outcome));
  return (outcome as { error: { code: string } }).error.code;
}

const put = (key: string, lease?: number): Command =>
  lease === undefined ? { type: 'put', key, value: utf8('v') } : { type: 'put', key, value: utf8('v'), lease };

test('grants choose ids deterministically; TTL bounds are refused, not adjusted', () => {
  const { store, ok, run } = commandCell({ limits });
  assert.deepEqual(ok({ type: 'leaseGrant', ttlMs: 5_000 }), { type: 'leaseGrant', id: 1, ttlMs: 5_000, revision: 0 });
  assert.deepEqual(ok({ type: 'leaseGrant', ttlMs: 6_000, id: 3 }), { type: 'leaseGrant', id: 3, ttlMs: 6_000, revision: 0 });
  assert.equal((ok({ type: 'leaseGrant', ttlMs: 7_000 }) as { id: number }).id, 4, 'skips past a client id');
  assert.equal(errorCode(run({ type: 'leaseGrant', ttlMs: 8_000, id: 3 })), 'invalid_argument', 'id taken');
  assert.throws(() => encodeCommand({ proposedAtMs: 1, op: { type: 'leaseGrant', ttlMs: 4_999 } }, limits), /between 5 s/);
  assert.throws(() => encodeCommand({ proposedAtMs: 1, op: { type: 'leaseGrant', ttlMs: limits.leaseTtlMsMax + 1 } }, limits));
  assert.equal(store.leaseCount(), 3);
  assert.deepEqual(store.lease(3), { id: 3, ttlMs: 6_000, remainingMs: 6_000, keyCount: 0 });
  assert.equal(store.revision, 0, 'grants change no revision');
  ok({ type: 'leaseGrant', ttlMs: 5_000 });
  assert.equal(errorCode(run({ type: 'leaseGrant', ttlMs: 5_000 })), 'quota_exceeded', 'leasesMax');
});

test('puts attach only to existing leases, within the keys-per-lease limit, txns all or nothing', () => {
  const { store, ok, run } = commandCell({ limits });
  ok({ type: 'leaseGrant', ttlMs: 5_000 });
  assert.equal(errorCode(run(put('/a', 9))), 'lease_not_found');
  ok(put('/a', 1));
  ok(put('/a', 1)); // already attached: takes no more room
  ok(put('/b', 1));
  ok(put('/c', 1));
  assert.equal(store.lease(1)?.keyCount, 3);
  assert.equal(errorCode(run(put('/d', 1))), 'quota_exceeded');
  const revision = store.revision;
  const txn: Command = {
    type: 'txn',
    compare: [],
    success: [put('/x') as never, { type: 'put', key: '/y', value: utf8('v'), lease: 9 }],
    failure: [],
  };
  assert.equal(errorCode(run(txn)), 'lease_not_found');
  assert.equal(store.revision, revision, 'the failed txn wrote nothing');
  assert.equal(store.range({ type: 'get', key: '/x', prefix: true }).count, 0);
  ok(put('/a')); // detached by a put without a lease
  ok({ type: 'delete', key: '/b' });
  assert.deepEqual(store.keysOfLease(1), ['/c']);
  assert.equal(store.lease(1)?.keyCount, 1);
});

test('revoke deletes every attached key in one revision, then the lease; checkpoints change no revision', () => {
  const { store, ok, run } = commandCell({ limits });
  ok({ type: 'leaseGrant', ttlMs: 10_000 });
  ok({ type: 'leaseGrant', ttlMs: 10_000 });
  for (const key of ['/s/a', '/s/b', '/s/c']) ok(put(key, 1));
  ok(put('/s/d', 2));
  const before = store.revision;
  const checkpoint = ok({ type: 'leaseCheckpoint', leases: [{ id: 1, remainingMs: 4_000 }, { id: 2, remainingMs: 99_000 }, { id: 7, remainingMs: 1 }] });
  assert.deepEqual(checkpoint, { type: 'leaseCheckpoint', updated: 2, revision: before });
  assert.equal(store.lease(1)?.remainingMs, 4_000);
  assert.equal(store.lease(2)?.remainingMs, 10_000, 'clamped to the TTL');
  assert.deepEqual(ok({ type: 'leaseRevoke', id: 1 }), { type: 'leaseRevoke', id: 1, deleted: 3, revision: before + 1 });
  assert.deepEqual(
    store.events({ startRevision: before + 1, limit: 10 }).map((e) => [e.type, e.kv.key, e.revision]),
    [['delete', '/s/a', before + 1], ['delete', '/s/b', before + 1], ['delete', '/s/c', before + 1]],
  );
  assert.equal(store.lease(1), null);
  assert.equal(errorCode(run({ type: 'leaseRevoke', id: 1 })), 'lease_not_found');
  assert.deepEqual(ok({ type: 'leaseRevoke', id: 2 }), { type: 'leaseRevoke', id: 2, deleted: 1, revision: before + 2 });
  assert.equal(store.leaseCount(), 0);
  assert.deepEqual(ok({ type: 'leaseGrant', ttlMs: 5_000 }), { type: 'leaseGrant', id: 3, ttlMs: 5_000, revision: before + 2 }, 'ids are never reused');
});

test('the lease table is state: in the hash, in snapshots, the same for any batching', () => {
  const ops: Command[] = [
    { type: 'leaseGrant', ttlMs: 5_000 },
    { type: 'leaseGrant', ttlMs: 9_000 },
    put('/k1', 1),
    put('/k2', 2),
    { type: 'leaseCheckpoint', leases: [{ id: 2, remainingMs: 3_000 }] },
    { type: 'leaseRevoke', id: 1 },
    { type: 'leaseGrant', ttlMs: 7_000 },
  ];
  const all = entries(ops);
  const hashes = [1, 2, 7].map((size) => {
    const store = new MvccStore(new MemoryEngine(), limits);
    for (let i = 0; i < all.length; i += size) store.applyBatch(all.slice(i, i + size));
    return store.hash({ includeAppliedIndex: true });
  });
  assert.equal(new Set(hashes).size, 1, 'same state for any batching');
  const source = new MvccStore(new MemoryEngine(), limits);
  source.applyBatch(all.slice(0, 4));
  const early = source.hash();
  source.applyBatch(all.slice(4, 5));
  assert.notEqual(source.hash(), early, 'a checkpoint changes the hash (but not the revision)');
  source.applyBatch(all.slice(5));
  const replica = new MvccStore(new MemoryEngine(), limits);
  replica.restore(source.snapshot({ chunkBytesMax: 64 }).chunks);
  assert.equal(replica.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
  assert.deepEqual(replica.leases(), [
    { id: 2, ttlMs: 9_000, remainingMs: 3_000, keyCount: 1 },
    { id: 3, ttlMs: 7_000, remainingMs: 7_000, keyCount: 0 },
  ]);
});
