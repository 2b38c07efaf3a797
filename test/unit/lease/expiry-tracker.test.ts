// The leader's lease deadlines: renewals move deadlines, expiries are named in bounded batches
// and retried if their revocation did not commit, and the checkpoint rule never cuts a promised
// TTL short across a leader change while still letting abandoned leases die under churn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IndexedMinHeap, LeaseExpiryTracker, defaultExpiryTrackerOptions } from '../../../src/lease/index.js';
import { SeededRandom, randomInt } from '../../../src/base/random.js';

test('the indexed heap pops in key order, and re-keys and removes items in place', () => {
  const random = new SeededRandom(9n);
  interface Item { id: number; key: number; at: number }
  const heap = new IndexedMinHeap<Item>({
    key: (item) => item.key,
    id: (item) => item.id,
    position: (item) => item.at,
    setPosition: (item, at) => {
      item.at = at;
    },
  });
  const items: Item[] = Array.from({ length: 500 }, (_, id) => ({ id, key: randomInt(random, 0, 1000), at: -1 }));
  for (const item of items) heap.push(item);
  // Re-key a third (both ways) and remove a tenth.
  for (const item of items) if (item.id % 3 === 0) {
    item.key = randomInt(random, 0, 1000);
    heap.update(item);
  }
  for (const item of items) if (item.id % 10 === 1) heap.remove(item);
  const expected = items.filter((i) => i.id % 10 !== 1).sort((a, b) => a.key - b.key || a.id - b.id).map((i) => i.id);
  const popped: number[] = [];
  for (let item = heap.pop(); item !== undefined; item = heap.pop()) {
    assert.equal(item.at, -1, 'a popped item knows it left');
    popped.push(item.id);
  }
  assert.deepEqual(popped, expected);
});

test('renewed leases do not expire; abandoned ones expire in bounded batches', () => {
  const tracker = new LeaseExpiryTracker({ ...defaultExpiryTrackerOptions, expireBatchMax: 2 });
  for (let id = 1; id <= 5; id++) tracker.granted(id, 10_000, 0);
  assert.deepEqual(tracker.expired(9_999), []);
  tracker.renew(1, 5_000);
  assert.deepEqual(tracker.expired(10_000), [2, 3]);
  assert.deepEqual(tracker.expired(10_000), [4, 5]);
  assert.deepEqual(tracker.expired(10_001), [], 'proposed revocations are not repeated at once');
  tracker.removed(2);
  tracker.removed(3);
  tracker.removed(4);
  // Lease 5's revocation never committed: it is proposed again after the retry delay.
  assert.deepEqual(tracker.expired(12_001), [5]);
  // Still not committed two seconds later: proposed again, together with lease 1, now expired.
  assert.deepEqual(tracker.expired(15_000), [5, 1]);
  assert.equal(tracker.renew(5, 15_000), null, 'a lease being revoked cannot be renewed');
});

test('a new leader keeps checkpointed remaining TTLs; renewed leases keep their full TTL', () => {
  const ttl = 10_000;
  let leader = new LeaseExpiryTracker();
  leader.granted(1, ttl, 0); // renewed every 3 s
  leader.granted(2, ttl, 0); // abandoned
  const replicated = new Map([[1, ttl], [2, ttl]]);
  let now = 0;
  // Leader changes every 5 s, faster than the TTL: without checkpoints lease 2 would live forever.
  for (let round = 0; round < 10 && replicated.has(2); round++) {
    for (let step = 0; step < 5; step++) {
      now += 1000;
      if (now % 3000 === 0) {
        const renewal = leader.renew(1, now);
        assert.ok(renewal !== null);
        if (renewal.resetCheckpoint) replicated.set(1, ttl);
      }
      for (const cp of leader.checkpoints(now)) replicated.set(cp.id, cp.remainingMs);
      for (const id of leader.expired(now)) {
        replicated.delete(id);
        leader.removed(id);
      }
    }
    leader = new LeaseExpiryTracker();
    leader.promote([...replicated].map(([id, remainingMs]) => ({ id, ttlMs: ttl, remainingMs })), now);
    assert.ok((leader.remainingMs(1, now) as number) >= ttl - 3000, 'the renewed lease is not cut short');
  }
  assert.equal(replicated.has(2), false, 'the abandoned lease expired despite the churn');
  assert.ok(replicated.has(1));
});

test('renewing far more often than TTL/3 costs no heap work and no memory', () => {
  const tracker = new LeaseExpiryTracker();
  for (let id = 1; id <= 100; id++) tracker.granted(id, 60_000, 0);
  for (let now = 1; now <= 20_000; now++) tracker.renew((now % 100) + 1, now);
  const heaps = tracker as unknown as { expiryHeap: { size: number } };
  assert.equal(heaps.expiryHeap.size, 100, 'one heap item per lease');
  // Old keys (from the grant at 0) come up first: the leases are re-filed, none is named. The
  // last renewals were at 19,901-20,000: due for a checkpoint 40% of the TTL later, not before.
  // (100 leases: each checkpoints() call scans them all.)
  assert.deepEqual(tracker.checkpoints(19_901 + 24_000 - 1), []);
  assert.equal(tracker.checkpoints(19_901 + 24_000).length, 1);
  assert.deepEqual(tracker.expired(60_000), []);
  assert.deepEqual(tracker.expired(20_000 + 59_999 - 100), [], 'no lease expires early');
  assert.equal(tracker.expired(20_000 + 60_000).length, 100);
});

test('the checkpoint scan looks at a bounded slice per call and resumes where it stopped', () => {
  const tracker = new LeaseExpiryTracker({ ...defaultExpiryTrackerOptions, checkpointBatchMax: 10, checkpointScanMax: 40 });
  for (let id = 1; id <= 100; id++) tracker.granted(id, 10_000, 0);
  tracker.removed(50);
  const seen: number[] = [];
  // All quiet for 40% of the TTL: 99 leases due, at most 10 named per call.
  for (let call = 0; call < 12; call++) seen.push(...tracker.checkpoints(4_000).map((c) => c.id));
  assert.deepEqual(seen, Array.from({ length: 100 }, (_, i) => i + 1).filter((id) => id !== 50));
  const bounded = new LeaseExpiryTracker({ ...defaultExpiryTrackerOptions, checkpointScanMax: 1000, checkpointBatchMax: 1000 });
  for (let id = 1; id <= 2500; id++) bounded.granted(id, 10_000, 0);
  assert.deepEqual([1, 2, 3, 4].map(() => bounded.checkpoints(4_000).length), [1000, 1000, 500, 0], 'a call stops at the end of a scan');
});

test('a lease re-filed many times still expires at its last deadline, and is checkpointed when quiet', () => {
  const tracker = new LeaseExpiryTracker();
  tracker.granted(1, 10_000, 0);
  let now = 0;
  for (; now < 50_000; now += 3_000) {
    tracker.renew(1, now);
    assert.deepEqual(tracker.expired(now), []);
    assert.deepEqual(tracker.checkpoints(now), [], 'a lease renewed every TTL/3 is never checkpointed');
  }
  const last = now - 3_000; // renewed last at 48,000: deadline 58,000; quiet from then on
  assert.deepEqual(tracker.checkpoints(last + 3_999), []);
  assert.deepEqual(tracker.checkpoints(last + 4_000), [{ id: 1, remainingMs: 6_000 }]);
  assert.deepEqual(tracker.checkpoints(last + 7_999), []);
  assert.deepEqual(tracker.checkpoints(last + 8_000), [{ id: 1, remainingMs: 2_000 }]);
  // Lost: the next pass checkpoints it again.
  tracker.checkpointFailed([1]);
  assert.deepEqual(tracker.checkpoints(last + 8_500), [{ id: 1, remainingMs: 1_500 }]);
  assert.deepEqual(tracker.expired(last + 9_999), []);
  assert.deepEqual(tracker.expired(last + 10_000), [1]);
  tracker.removed(1);
  assert.equal(tracker.size, 0);
  assert.deepEqual(tracker.expired(last + 20_000), []);
  assert.deepEqual(tracker.checkpoints(last + 20_000), []);
});

test('an imported lease renews to its granted TTL, and a re-import never moves its deadline earlier', () => {
  const tracker = new LeaseExpiryTracker(defaultExpiryTrackerOptions);
  tracker.imported(7, 10_000, 4_000, 0);
  assert.equal(tracker.remainingMs(7, 0), 4_000);
  assert.deepEqual(tracker.renew(7, 1_000), { ttlMs: 10_000, resetCheckpoint: true }, 'a renewal gives the full TTL, after a reset');
  assert.equal(tracker.remainingMs(7, 1_000), 10_000);
  tracker.imported(7, 10_000, 2_000, 2_000); // the source's older figure arrives late
  assert.equal(tracker.remainingMs(7, 2_000), 9_000, 'not cut short');
  tracker.imported(7, 10_000, 10_000, 5_000); // a renewal on the source, carried over
  assert.equal(tracker.remainingMs(7, 5_000), 10_000);
  assert.deepEqual(tracker.expired(14_999), []);
  assert.deepEqual(tracker.expired(15_000), [7]);
});
