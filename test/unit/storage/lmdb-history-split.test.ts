// The history table ('h') in an LMDB database of its own (stores created since that split): the
// engine must still read, range (both ways), count and snapshot one ordered key space exactly
// like the memory engine, across the history's bounds and with long keys in and around it; and
// a store written before the split (data in LMDB's root database) must keep opening as one
// database, with its content, and stay one after reopening.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { open } from 'lmdb';
import { SeededRandom, chance, randomInt, type Random } from '../../../src/base/random.js';
import { MemoryEngine, compareBytes } from '../../../src/mvcc/index.js';
import type { KvEngine } from '../../../src/mvcc/index.js';
import { LmdbEngine, inlineKeyBytesMax } from '../../../src/storage/index.js';
import { withTempDir } from './temp-dir.js';
import { dump, hex, randomWrites, writeToEach } from './engine-writes.js';

const firstBytes = [0x01, 0x67, 0x68, 0x68, 0x69, 0x6b, 0xff];

function randomKey(random: Random): Uint8Array {
  const long = chance(random, 0.2);
  const length = long ? inlineKeyBytesMax + randomInt(random, -2, 60) : randomInt(random, 1, 14);
  const out = new Uint8Array(length).fill(0x61);
  out[0] = firstBytes[randomInt(random, 0, firstBytes.length - 1)] as number;
  for (const at of [1, 2, inlineKeyBytesMax - 1, inlineKeyBytesMax, length - 1]) {
    if (at >= 1 && at < length && chance(random, 0.5)) out[at] = [0x00, 0x61, 0xff][randomInt(random, 0, 2)] as number;
  }
  return out;
}

function randomBound(random: Random): Uint8Array {
  // Often exactly a table bound ('h', 'i') or the empty key.
  if (chance(random, 0.3)) return [new Uint8Array(0), Uint8Array.of(0x68), Uint8Array.of(0x69)][randomInt(random, 0, 2)] as Uint8Array;
  return randomKey(random);
}

async function checkAgainstMemory(lmdb: LmdbEngine, seed: bigint): Promise<MemoryEngine> {
  const memory = new MemoryEngine();
  const random = new SeededRandom(seed);
  for (let round = 0; round < 30; round++) {
    writeToEach([lmdb, memory], randomWrites(random, round, randomKey));
    for (let i = 0; i < 10; i++) {
      const [start, end] = [randomBound(random), randomBound(random)].sort(compareBytes) as [Uint8Array, Uint8Array];
      assert.deepEqual(dump(lmdb, { start, end }), dump(memory, { start, end }));
      assert.deepEqual(dump(lmdb, { start, end, reverse: true }), dump(memory, { start, end, reverse: true }));
      assert.equal(lmdb.count({ start, end }), memory.count({ start, end }));
      const probe = randomKey(random);
      const expected = memory.get(probe);
      assert.deepEqual(lmdb.get(probe), expected === undefined ? undefined : Buffer.from(expected));
    }
  }
  const snapshot = (engine: KvEngine): string[] => [...engine.snapshotEntries()].map((e) => `${hex(e.key)}=${hex(e.value)}`);
  assert.deepEqual(snapshot(lmdb), snapshot(memory));
  return memory;
}

test('a new store keeps history in its own database and reads as one ordered key space', async () => {
  await withTempDir(async (dir) => {
    let lmdb = LmdbEngine.open({ directory: dir });
    assert.equal(lmdb.splitHistory, true);
    const memory = await checkAgainstMemory(lmdb, 11n);
    // replaceAll rewrites both databases, atomically.
    const entries = [...memory.snapshotEntries()].reverse().slice(0, 40).reverse();
    lmdb.replaceAll(entries);
    assert.deepEqual([...lmdb.snapshotEntries()].map((e) => hex(e.key)), entries.map((e) => hex(e.key)));
    await lmdb.close();
    lmdb = LmdbEngine.open({ directory: dir });
    try {
      assert.equal(lmdb.splitHistory, true);
      assert.deepEqual([...lmdb.snapshotEntries()].map((e) => hex(e.key)), entries.map((e) => hex(e.key)));
    } finally {
      await lmdb.close();
    }
  });
});

test('a store written before the split (data in the root database) opens as one database, content intact', async () => {
  await withTempDir(async (dir) => {
    // What earlier versions wrote: every table in LMDB's root database of db/state.mdb.
    const old = open<Uint8Array, Uint8Array>({ path: join(dir, 'state.mdb'), keyEncoding: 'binary', encoding: 'binary', pageSize: 8192 });
    const written = [
      { key: Uint8Array.of(0x01), value: Uint8Array.of(1, 2) },
      { key: Uint8Array.of(0x68, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0), value: Uint8Array.of(3) },
      { key: Uint8Array.of(0x6b, 0x61), value: Uint8Array.of(4) },
    ];
    old.transactionSync(() => {
      for (const entry of written) old.putSync(entry.key, entry.value);
    });
    await old.close();
    let lmdb = LmdbEngine.open({ directory: dir });
    try {
      assert.equal(lmdb.splitHistory, false);
      assert.deepEqual([...lmdb.snapshotEntries()].map((e) => hex(e.key)), written.map((e) => hex(e.key)));
      assert.deepEqual(lmdb.get(written[1]!.key), Buffer.from(written[1]!.value));
    } finally {
      await lmdb.close();
    }
    lmdb = LmdbEngine.open({ directory: dir });
    try {
      assert.equal(lmdb.splitHistory, false);
      lmdb.write((writer) => {
        for (const entry of written) writer.delete(entry.key);
      });
      await checkAgainstMemory(lmdb, 12n);
    } finally {
      await lmdb.close();
    }
  });
});
