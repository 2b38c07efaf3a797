// The fencing epoch and the restore into the next one (docs/design/restore.md): revision
// arithmetic, the bound refused at apply on every replica alike, and a restored store keeping
// every key's create/mod revision and version while everything below the floor is compacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType } from '../../../src/raft/types.js';
import {
  MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand, epochEnd, epochFloor, epochOfRevision, epochRevisions, utf8,
} from '../../../src/mvcc/index.js';
import type { Command } from '../../../src/mvcc/index.js';
import { decodeMeta, encodeMeta } from '../../../src/mvcc/records.js';
import { metaKey } from '../../../src/mvcc/layout.js';
import { commandCell } from './store-cells.js';

const put = (key: string, value: string, extra: Partial<Command> = {}): Command => ({ type: 'put', key, value: utf8(value), ...extra }) as Command;

test('epoch arithmetic: 2^40 revisions per epoch, all exact below 2^53', () => {
  assert.equal(epochRevisions, 2 ** 40);
  assert.equal(epochFloor(0), 0);
  assert.equal(epochFloor(1), 2 ** 40);
  assert.equal(epochEnd(1), 2 ** 41);
  assert.equal(epochOfRevision(2 ** 40 - 1), 0);
  assert.equal(epochOfRevision(2 ** 40), 1);
  assert.equal(epochOfRevision(3 * 2 ** 40 + 17), 3);
  assert.ok(Number.isSafeInteger(epochEnd(8190) - 1));
  assert.throws(() => epochFloor(8191));
});

/** A store at epoch `epoch` whose revision is `revision` (as if it had applied that many writes). */
function storeAt(epoch: number, revision: number): MvccStore {
  const engine = new MemoryEngine();
  const meta = { appliedIndex: 10, appliedTerm: 1, revision, compactRevision: 0, dedupClockMs: 0, storeFormat: 2 as const, epoch };
  engine.write((writer) => writer.put(metaKey, encodeMeta(meta)));
  return new MvccStore(engine);
}

test('the epoch bound: the write that would reach (e+1)*2^40 is refused unavailable, the same on every replica', () => {
  const hashes: string[] = [];
  for (const replica of [1, 2]) {
    const { store, run, ok } = commandCell({ store: storeAt(0, epochEnd(0) - 2) });
    assert.equal(ok(put('/a', 'last')).revision, epochEnd(0) - 1, 'the last revision of the epoch is issued');
    const refused = run(put('/a', 'over', {}));
    assert.ok(refused.type === 'failed', `replica ${replica}: refused`);
    assert.equal(refused.error.code, 'unavailable');
    assert.match(refused.error.message, /epoch is spent: restore it into a new epoch/);
    // Every kind that may issue a revision is refused; nothing was written.
    assert.equal(run({ type: 'delete', key: '/a' }).type, 'failed');
    assert.equal(run({ type: 'leaseGrant', ttlMs: 10_000, id: 5 }).type, 'failed');
    assert.equal(store.revision, epochEnd(0) - 1);
    assert.equal(store.range({ type: 'get', key: '/a' }).kvs[0]?.value.length, 4);
    // A read and a compact are still served: the cell is readable until it is restored.
    assert.equal(run({ type: 'compact', revision: epochEnd(0) - 1 }).type, 'applied');
    hashes.push(store.hash({ includeAppliedIndex: true }));
  }
  assert.equal(hashes[0], hashes[1], 'replicas agree on the refusal');
  // Epoch 2 is bounded the same way at its own end.
  const { run } = commandCell({ store: storeAt(2, epochEnd(2) - 1) });
  assert.equal(run(put('/b', 'x')).type, 'failed');
});

test('a refusal with a Request-ID is remembered as such (a retry gets the same answer)', () => {
  const store = storeAt(0, epochEnd(0) - 1);
  const data = encodeCommand({ proposedAtMs: 1, requestId: 'r-1', op: put('/a', 'x') }, defaultMvccLimits);
  const [first] = store.applyBatch([{ index: 11, term: 1, type: EntryType.normal, data }]);
  const [again] = store.applyBatch([{ index: 12, term: 1, type: EntryType.normal, data }]);
  assert.ok(first?.type === 'failed' && again?.type === 'failed');
  assert.equal(again.duplicate, true);
  assert.equal(again.error.code, 'unavailable');
});

test('restore into the next epoch: keys keep revisions and versions, the floor is the revision and compact revision', () => {
  const { store: old, ok } = commandCell();
  ok({ type: 'leaseGrant', ttlMs: 10_000, id: 7 });
  ok({ type: 'leaseGrant', ttlMs: 60_000, id: 8 });
  ok({ type: 'leaseCheckpoint', leases: [{ id: 7, remainingMs: 4_000 }, { id: 8, remainingMs: 59_800 }] });
  ok(put('/k/a', 'a1'));
  ok(put('/k/a', 'a2'));
  ok(put('/k/b', 'b1', { lease: 7 }));
  ok(put('/k/c', 'c1'));
  ok({ type: 'delete', key: '/k/c' });
  const before = old.range({ type: 'get', key: '/k/', prefix: true });
  const snapshot = old.snapshot();
  const chunks = [...snapshot.chunks];
  const restored = new MvccStore(new MemoryEngine());
  const metas = restored.restoreNextEpoch(chunks, { leaseGraceMs: 1_000 });
  assert.equal(metas.old.epoch, 0);
  assert.equal(metas.old.revision, old.revision);
  const floor = 2 ** 40;
  assert.equal(restored.epoch, 1);
  assert.equal(restored.revision, floor);
  assert.equal(restored.compactRevision, floor);
  assert.equal(restored.appliedIndex, 0);
  const after = restored.range({ type: 'get', key: '/k/', prefix: true });
  assert.deepEqual(after.kvs, before.kvs, 'every key with its create/mod revision, version, lease and value');
  assert.equal(after.revision, floor);
  // Below the floor is compacted: reads and watch catch-up alike.
  assert.throws(() => restored.range({ type: 'get', key: '/k/a', revision: 2 }), { code: 'compacted' });
  assert.throws(() => restored.events({ startRevision: 3, limit: 10 }), { code: 'compacted' });
  assert.equal(restored.compactionPending(), false, 'the backup history is dropped, not compacted later');
  // Leases: remaining + grace, never above the TTL.
  assert.deepEqual(restored.lease(7), { id: 7, ttlMs: 10_000, remainingMs: 5_000, keyCount: 1 });
  assert.deepEqual(restored.lease(8), { id: 8, ttlMs: 60_000, remainingMs: 60_000, keyCount: 0 });
  // The first write after the restore is floor + 1; an existing key keeps its create revision (its token).
  const { ok: okNew } = commandCell({ store: restored });
  assert.deepEqual(okNew(put('/k/new', 'n')), { type: 'put', created: true, version: 1, revision: floor + 1, fencingToken: floor + 1 });
  assert.deepEqual(okNew(put('/k/a', 'a3')), { type: 'put', created: false, version: 3, revision: floor + 2, fencingToken: before.kvs[0]?.createRevision });
  // A backup of the restored cell restores to epoch 2.
  const again = new MvccStore(new MemoryEngine());
  again.restoreNextEpoch([...restored.snapshot().chunks], { leaseGraceMs: 0 });
  assert.equal(again.epoch, 2);
  assert.equal(again.revision, 2 * floor);
  assert.equal(decodeMeta(encodeMeta({ ...metas.restored })).epoch, 1);
});

test('restore is deterministic: two members restored from one backup hold the same state', () => {
  const { store: old, ok } = commandCell();
  for (let i = 0; i < 50; i++) ok(put(`/d/${i % 7}`, `v${i}`, { requestId: `q${i}` } as Partial<Command>));
  const chunks = [...old.snapshot().chunks];
  const a = new MvccStore(new MemoryEngine());
  const b = new MvccStore(new MemoryEngine());
  a.restoreNextEpoch(chunks, { leaseGraceMs: 500 });
  b.restoreNextEpoch(chunks, { leaseGraceMs: 500 });
  assert.equal(a.hash({ includeAppliedIndex: true }), b.hash({ includeAppliedIndex: true }));
  assert.notEqual(a.hash(), old.hash());
});

test('lock queues across a restore: a contender from the backup stays ahead; new keys take the wide sequence form', () => {
  const { store: old, ok } = commandCell();
  ok({ type: 'leaseGrant', ttlMs: 10_000, id: 1 });
  ok({ type: 'leaseGrant', ttlMs: 10_000, id: 2 });
  const held = ok({ type: 'seqCreate', prefix: '/locks/res/', value: utf8('a'), lease: 1, ifEmpty: false }) as { kv: { key: string; createRevision: number } };
  assert.match(held.kv.key, /^\/locks\/res\/\d{12}$/);
  const restored = new MvccStore(new MemoryEngine());
  restored.restoreNextEpoch([...old.snapshot().chunks], { leaseGraceMs: 0 });
  const { ok: okNew } = commandCell({ store: restored });
  const waiting = okNew({ type: 'seqCreate', prefix: '/locks/res/', value: utf8('b'), lease: 2, ifEmpty: false }) as {
    kv: { key: string; createRevision: number }; owner: { key: string }; predecessor: { key: string } | null;
  };
  assert.equal(waiting.kv.key, `/locks/res/r${String(2 ** 40 + 1).padStart(16, '0')}`);
  assert.equal(waiting.kv.createRevision, 2 ** 40 + 1);
  assert.equal(waiting.owner.key, held.kv.key, 'the restored holder still owns the lock');
  assert.equal(waiting.predecessor?.key, held.kv.key);
  // seqCheck reads the wide key back (validateSeqKey) and keeps the order.
  const checked = okNew({ type: 'seqCheck', prefix: '/locks/res/', key: waiting.kv.key, lease: 2 }) as { owner: { key: string } };
  assert.equal(checked.owner.key, held.kv.key);
});
