// hashKeySpace (etcd's HashKV): replicas that applied the same log agree at every revision, a
// store whose content differs by one value byte does not, and the revision bounds are etcd's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType } from '../../../src/raft/types.js';
import { CompactedError, FutureRevisionError } from '../../../src/base/errors.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand, hashKeySpace, hashKeySpaceSteps, utf8 } from '../../../src/mvcc/index.js';
import type { Command } from '../../../src/mvcc/index.js';

function replica(): { store: MvccStore; apply: (op: Command) => void } {
  const store = new MvccStore(new MemoryEngine());
  let index = 0;
  return {
    store,
    apply: (op) => {
      const data = encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits);
      const [outcome] = store.applyBatch([{ index: ++index, term: 1, type: EntryType.normal, data }]);
      assert.equal(outcome?.type, 'applied', JSON.stringify(outcome));
    },
  };
}

function load(apply: (op: Command) => void, lastValue = 'v-last'): void {
  // Over a page of keys (1,000) and of events (1,024), with a txn of several events in a revision.
  for (let i = 0; i < 1100; i++) apply({ type: 'put', key: `/k/${String(i).padStart(5, '0')}`, value: utf8(`v${i}`) } as Command);
  for (let i = 0; i < 50; i++) apply({ type: 'put', key: `/k/${String(i).padStart(5, '0')}`, value: utf8(`w${i}`) } as Command);
  apply({ type: 'delete', key: '/k/00007' } as Command);
  apply({ type: 'put', key: '/z', value: utf8(lastValue) } as Command);
}

test('replicas agree at every revision; one different value byte disagrees', () => {
  const a = replica();
  const b = replica();
  const c = replica();
  load(a.apply);
  load(b.apply);
  load(c.apply, 'v-lasT');
  const now = hashKeySpace(a.store);
  assert.equal(now.revision, a.store.revision);
  assert.equal(now.compactRevision, 0);
  assert.ok(Number.isInteger(now.hash) && now.hash >= 0 && now.hash < 2 ** 32);
  assert.deepEqual(hashKeySpace(b.store), now);
  assert.notEqual(hashKeySpace(c.store).hash, now.hash);
  for (const revision of [1, 1000, 1024, 1025, 1100, 1151]) {
    assert.deepEqual(hashKeySpace(a.store, revision), hashKeySpace(b.store, revision), `revision ${revision}`);
    assert.deepEqual(hashKeySpace(a.store, revision), hashKeySpace(c.store, revision), `before the differing put, revision ${revision}`);
  }
  assert.notEqual(hashKeySpace(a.store, 1000).hash, hashKeySpace(a.store, 1001).hash, 'each revision changes the hash');
  // The state at a past revision is what is hashed: a later change does not change it.
  const before = hashKeySpace(a.store, 1150);
  a.apply({ type: 'put', key: '/k/00001', value: utf8('later') } as Command);
  assert.deepEqual(hashKeySpace(a.store, 1150), before);
  assert.notEqual(hashKeySpace(a.store).hash, before.hash);
});

test('bounds: a future revision and a compacted one are refused, the compact revision is hashed', () => {
  const a = replica();
  const b = replica();
  load(a.apply);
  load(b.apply);
  assert.throws(() => hashKeySpace(a.store, a.store.revision + 1), FutureRevisionError);
  a.apply({ type: 'compact', revision: 500 } as Command);
  b.apply({ type: 'compact', revision: 500 } as Command);
  assert.throws(() => hashKeySpace(a.store, 499), CompactedError);
  const at = hashKeySpace(a.store, 1100);
  assert.equal(at.compactRevision, 500);
  assert.deepEqual(hashKeySpace(b.store, 1100), at);
  assert.deepEqual(hashKeySpace(a.store, 500), hashKeySpace(b.store, 500));
});

test('in steps: the same hash, and a compaction past its compact revision between steps is refused', () => {
  const a = replica();
  load(a.apply);
  let steps = 0;
  const stepped = hashKeySpaceSteps(a.store, 1100);
  let step = stepped.next();
  for (; step.done !== true; step = stepped.next()) {
    steps++;
    a.apply({ type: 'put', key: '/later', value: utf8(`x${steps}`) } as Command); // writes meanwhile change nothing at 1100
  }
  assert.ok(steps >= 2, `${steps} steps`);
  assert.deepEqual(step.value, hashKeySpace(a.store, 1100));
  const interrupted = hashKeySpaceSteps(a.store, 1100);
  interrupted.next();
  a.apply({ type: 'compact', revision: 200 } as Command);
  assert.throws(() => interrupted.next(), CompactedError);
});
