// The leader's lease deadlines: renewals move deadlines, expiries are named in bounded batches
// and retried if their revocation did not commit, and the checkpoint rule never cuts a promised
// TTL short across a leader change while still letting abandoned leases die under churn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseExpiryTracker, MinHeap, defaultExpiryTrackerOptions } from '../../../src/lease/index.js';
import { SeededRandom, randomInt } from '../../../src/base/random.js';

test('the min-heap pops in key order', () => {
  const random = new SeededRandom(9n);
  const heap = new MinHeap<number>();
  const keys = Array.from({ length: 500 }, () => randomInt(random, 0, 1000));
  keys.forEach((k, i) => heap.push(k, i));
  const popped: number[] = [];
  for (let item = heap.pop(); item !== undefined; item = heap.pop()) popped.push(item.key);
  assert.deepEqual(popped, [...keys].sort((a, b) => a - b));
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

test('renewing far more often than TTL/3 does not grow memory without bound', () => {
  const tracker = new LeaseExpiryTracker();
  for (let id = 1; id <= 100; id++) tracker.granted(id, 60_000, 0);
  for (let now = 1; now <= 20_000; now++) tracker.renew((now % 100) + 1, now);
  const heapSize = (tracker as unknown as { heap: { size: number } }).heap.size;
  assert.ok(heapSize <= 2 * 100 + 1024, `heap holds ${heapSize} items for 100 leases`);
  assert.deepEqual(tracker.expired(20_000 + 59_999 - 100), [], 'no lease expires early after compaction');
  assert.equal(tracker.expired(20_000 + 60_000).length, 100);
});
