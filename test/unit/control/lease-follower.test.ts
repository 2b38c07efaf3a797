// The lease follower (src/control/lease-follower.ts) against a source whose leases its owners
// renew and a destination that records what it is sent: a renewal is carried over as an import of
// leases alone; a lease nobody renews is left to end; a lease gone on the source is let go. The
// first case is session 26's CI failure in small: the copy's import took 3 s to answer (a slow
// destination disk), and the owner renewed meanwhile by less than that. Counting the lease's
// deadline from the answer, the follower thought the destination's copy later than it was and
// carried nothing, and the copy ended on the destination while the owner renewed in time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseFollower, type FollowerCalls } from '../../../src/control/lease-follower.js';
import { parseImportRecord } from '../../../src/mvcc/index.js';
import type { ImportRecord } from '../../../src/base/namespace-import.js';

const source = { id: 'cell-1', endpoints: [] };
const destination = { id: 'cell-2', endpoints: [] };
const ttlMs = 5_000;

function world() {
  let nowMs = 0;
  /** Lease id -> its deadline on the source (absent: ended there). */
  const deadlines = new Map<number, number>();
  const sent: { atMs: number; record: ImportRecord }[] = [];
  const calls: FollowerCalls = {
    readLease: async (cell, id) => {
      assert.equal(cell.id, source.id, 'leases are read on the source');
      const deadline = deadlines.get(id);
      return deadline === undefined || deadline <= nowMs ? null : { id, ttlMs, remainingMs: deadline - nowMs, origin: source.id };
    },
    sendImport: async (cell, bytes) => {
      assert.equal(cell.id, destination.id, 'renewals go to the destination');
      sent.push({ atMs: nowMs, record: parseImportRecord(bytes) });
      return { imported: 0, revision: 1 };
    },
    readNamespace: async () => ({ revision: 1, kvs: [] }),
  };
  const follower = new LeaseFollower('/ns/', source, destination, { nowMs: () => nowMs }, calls);
  return {
    follower, deadlines, sent,
    at: (ms: number) => { nowMs = ms; },
    renew: (id: number) => deadlines.set(id, nowMs + ttlMs),
  };
}

test('a renewal made while the import was answered slowly is carried (deadlines count from the source read)', async () => {
  const w = world();
  w.at(0);
  w.deadlines.set(7, 4_000); // read for the import at 0: 4 s left; the destination applies it at ~1.5 s (deadline ~5.5 s)
  w.at(1_000);
  w.renew(7); // the owner renews on the source: deadline 6 s, past the destination's copy
  w.at(3_000); // the import is answered
  w.follower.follow([{ id: 7, ttlMs, remainingMs: 4_000, origin: source.id }], 0);
  w.at(3_100);
  await w.follower.round();
  assert.equal(w.sent.length, 1, 'the renewal is carried');
  const record = w.sent[0]!.record;
  assert.deepEqual(record.leases, [{ id: 7, ttlMs, remainingMs: 2_900, origin: source.id }]);
  assert.deepEqual([record.puts.length, record.deletes.length, record.clear, record.floor, record.destination], [0, 0, false, 0, destination.id], 'leases alone');
  // Not renewed again: nothing more to carry.
  w.at(3_600);
  await w.follower.round();
  assert.equal(w.sent.length, 1);
});

test('a lease nobody renews is not raised; one gone on the source is let go', async () => {
  const w = world();
  w.at(0);
  w.deadlines.set(8, 5_000);
  w.deadlines.set(9, 5_000);
  w.follower.follow([{ id: 8, ttlMs, remainingMs: 5_000 }, { id: 9, ttlMs, remainingMs: 5_000 }], 0);
  for (let ms = 500; ms <= 4_500; ms += 500) {
    w.at(ms);
    await w.follower.round();
  }
  assert.equal(w.sent.length, 0, 'no renewal: nothing carried (the destination ends it at its deadline)');
  w.deadlines.delete(9); // revoked on the source
  w.at(5_500); // and 8 expired there
  await w.follower.round();
  assert.equal(w.follower.size, 0, 'both let go');
  assert.equal(w.sent.length, 0);
});

test('a renewal is carried within a round, each lease once per renewal', async () => {
  const w = world();
  w.at(0);
  w.deadlines.set(10, 5_000);
  w.follower.follow([{ id: 10, ttlMs, remainingMs: 5_000 }], 0);
  for (let ms = 500; ms <= 10_000; ms += 500) {
    w.at(ms);
    if (ms % 1_500 === 0) w.renew(10); // renewed every 1.5 s
    await w.follower.round();
  }
  // Renewals at 1.5, 3, 4.5, 6, 7.5, 9 s: each carried in the round that saw it.
  assert.deepEqual(w.sent.map((s) => s.atMs), [1_500, 3_000, 4_500, 6_000, 7_500, 9_000]);
  assert.equal(w.follower.carried, 6);
});
