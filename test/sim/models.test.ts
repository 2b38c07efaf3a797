// The world models behave as the checkers assume: a disk keeps exactly the writes that finished
// (plus at most a torn prefix of the one in progress), and a partition blocks exactly the
// directed links it names, so one-way partitions are real.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom } from '../../src/base/random.js';
import type { Entry } from '../../src/raft/index.js';
import { EntryType } from '../../src/raft/index.js';
import { SimDisk } from '../../src/sim/disk.js';
import { SimNetwork } from '../../src/sim/network.js';

const conf = { voters: [1], votersOutgoing: [], learners: [] };

function entries(first: number, count: number, term: number): Entry[] {
  return Array.from({ length: count }, (_, i) => ({
    index: first + i,
    term,
    type: EntryType.normal,
    data: new Uint8Array([i]),
  }));
}

test('a crash keeps finished writes and loses the ones in progress', () => {
  const disk = new SimDisk(new SeededRandom(1n), 5, 5);
  const first = disk.submit(0, {
    kind: 'ready',
    snapshot: null,
    entries: entries(1, 3, 1),
    hardState: { term: 1, vote: 1, commit: 0 },
  });
  disk.submit(0, {
    kind: 'ready',
    snapshot: null,
    entries: entries(4, 2, 1),
    hardState: { term: 1, vote: 1, commit: 3 },
  });
  assert.equal(first.doneAtMs, 5);
  disk.completeThrough(first.id);
  disk.crash(7, 0);
  const recovered = disk.recover(conf);
  assert.deepEqual(
    recovered.entries.map((e) => e.index),
    [1, 2, 3],
  );
  assert.deepEqual(recovered.hardState, { term: 1, vote: 1, commit: 0 });
});

test('a torn write keeps a prefix of its entries and never its hard state', () => {
  for (let seed = 1n; seed <= 20n; seed++) {
    const disk = new SimDisk(new SeededRandom(seed), 10, 10);
    disk.submit(0, {
      kind: 'ready',
      snapshot: null,
      entries: entries(1, 8, 2),
      hardState: { term: 2, vote: 1, commit: 0 },
    });
    const { tornEntries } = disk.crash(3, 1);
    const recovered = disk.recover(conf);
    assert.equal(recovered.entries.length, tornEntries);
    assert.ok(tornEntries < 8, 'never the whole write');
    assert.deepEqual(recovered.hardState, { term: 0, vote: 0, commit: 0 });
  }
});

test('a later write at an existing index replaces that index and everything after it', () => {
  const disk = new SimDisk(new SeededRandom(2n), 0, 0);
  const a = disk.submit(0, {
    kind: 'ready',
    snapshot: null,
    entries: entries(1, 5, 1),
    hardState: null,
  });
  const b = disk.submit(0, {
    kind: 'ready',
    snapshot: null,
    entries: entries(3, 1, 2),
    hardState: null,
  });
  disk.completeThrough(Math.max(a.id, b.id));
  assert.deepEqual(
    disk.recover(conf).entries.map((e) => `${e.index}/${e.term}`),
    ['1/1', '2/1', '3/2'],
  );
});

test('one-way partitions block only the named direction, and heal restores both', () => {
  const network = new SimNetwork(new SeededRandom(3n), 1, 5, {
    lossRate: 0,
    duplicateRate: 0,
    reorderRate: 0,
  });
  network.block(1, 2);
  assert.deepEqual(network.route(0, 1, 2), []);
  assert.equal(network.route(0, 2, 1).length, 1);
  network.heal();
  assert.equal(network.route(0, 1, 2).length, 1);
});

test('without reordering a link delivers in FIFO order', () => {
  const network = new SimNetwork(new SeededRandom(4n), 1, 20, {
    lossRate: 0,
    duplicateRate: 0,
    reorderRate: 0,
  });
  let last = 0;
  for (let now = 0; now < 200; now++) {
    const [at] = network.route(now, 1, 2);
    assert.ok(at !== undefined && at >= last, 'never overtakes an earlier message');
    last = at;
  }
});
