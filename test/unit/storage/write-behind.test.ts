// Write-behind (src/storage/write-behind.ts): an LMDB engine holding its writes in memory for a
// few milliseconds reads, ranges, counts and rolls back exactly like the memory engine, and what
// it holds reaches the file by the delay, a checkpoint, the size bound or close (the state machine
// on it against the reference model: lmdb-model.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom, chance, randomInt, type Random } from '../../../src/base/random.js';
import { MemoryEngine, compareBytes } from '../../../src/mvcc/index.js';
import { LmdbEngine, inlineKeyBytesMax } from '../../../src/storage/index.js';
import { withTempDir } from './temp-dir.js';
import { assertSameContents, dump, randomWrites, writeToEach } from './engine-writes.js';

const held = { delayMs: 10_000, maxKeys: 40, maxBytes: 1 << 20 };

function randomKey(random: Random): Uint8Array {
  const long = chance(random, 0.2);
  const length = long ? inlineKeyBytesMax + randomInt(random, -2, 40) : randomInt(random, 1, 4);
  const out = new Uint8Array(length).fill(0x61);
  for (const at of [0, 1, inlineKeyBytesMax, length - 1]) {
    if (at >= 0 && at < length && chance(random, 0.5)) out[at] = [0x00, 0x61, 0xff][randomInt(random, 0, 2)] as number;
  }
  // The store's keys start with a table byte, never 0x00 (lmdb-js's reverse range skips the key
  // 0x00 itself, with or without write-behind).
  if (out[0] === 0x00) out[0] = 0x01;
  return out;
}

const asBuffer = (value: Uint8Array | undefined): Buffer | undefined => (value === undefined ? undefined : Buffer.from(value));

test('with writes held back, the LMDB engine reads, ranges, counts and rolls back like the memory engine', async () => {
  for (const seed of [1n, 2n, 3n]) {
    await withTempDir(async (dir) => {
      const lmdb = LmdbEngine.open({ directory: dir, commits: 'deferred', writeBehind: held });
      const memory = new MemoryEngine();
      const random = new SeededRandom(seed);
      try {
        for (let round = 0; round < 60; round++) {
          if (chance(random, 0.15)) {
            // A body that throws after writing and reading its own writes: neither engine keeps any of it.
            for (const engine of [lmdb, memory]) {
              assert.throws(() => engine.write((writer) => {
                for (const write of randomWrites(random, 200, randomKey)) {
                  if (write.value === undefined) writer.delete(write.key);
                  else writer.put(write.key, write.value);
                }
                throw new Error('abort');
              }), /abort/);
            }
          }
          writeToEach([lmdb, memory], randomWrites(random, round, randomKey));
          if (chance(random, 0.1)) lmdb.commitPending();
          for (let i = 0; i < 8; i++) {
            const [start, end] = [randomKey(random), randomKey(random)].sort(compareBytes) as [Uint8Array, Uint8Array];
            const reverse = chance(random, 0.3);
            assert.deepEqual(dump(lmdb, { start, end, reverse }), dump(memory, { start, end, reverse }));
            assert.equal(lmdb.count({ start, end }), [...memory.range({ start, end })].length);
            const probe = randomKey(random);
            assert.deepEqual(lmdb.get(probe), asBuffer(memory.get(probe)));
          }
        }
        // Inside a write, reads see that write's own changes, ranges included.
        const inside = Uint8Array.of(0x61, 0x7a);
        lmdb.write((writer) => {
          writer.put(inside, Uint8Array.of(9));
          assert.deepEqual(writer.get(inside), Buffer.of(9));
          assert.ok([...writer.range({ start: inside, end: Uint8Array.of(0x61, 0x7b) })].length === 1);
          writer.delete(inside);
          assert.equal(writer.get(inside), undefined);
        });
        assertSameContents(lmdb, memory, inlineKeyBytesMax + 100);
      } finally {
        await lmdb.close();
      }
    });
  }
});

test('held writes reach the file after the delay, at a checkpoint, past maxKeys, and at close', async () => {
  await withTempDir(async (dir) => {
    const key = (n: number): Uint8Array => Uint8Array.of(0x6b, n);
    // A second handle reads the file, as the snapshot thread does: it sees only committed writes
    // (lmdb-js renews its read transaction on a later turn, hence the turn before each look).
    const fileHas = async (file: LmdbEngine, k: Uint8Array): Promise<Buffer | undefined> => {
      await new Promise((resolve) => setImmediate(resolve));
      return file.get(k) as Buffer | undefined;
    };
    let engine = LmdbEngine.open({ directory: dir, commits: 'deferred', writeBehind: { delayMs: 30, maxKeys: 1_000, maxBytes: 1 << 20 } });
    let file = LmdbEngine.attach({ directory: dir, commits: 'deferred' });
    try {
      engine.write((writer) => writer.put(key(1), Uint8Array.of(1)));
      assert.deepEqual(engine.get(key(1)), Buffer.of(1));
      assert.equal(await fileHas(file, key(1)), undefined);
      await new Promise((resolve) => setTimeout(resolve, 150));
      assert.deepEqual(await fileHas(file, key(1)), Buffer.of(1), 'committed within the delay');
    } finally {
      await file.close();
      await engine.close();
    }
    // Held for a minute: what reaches the file now came by a checkpoint, a size limit or close.
    engine = LmdbEngine.open({ directory: dir, commits: 'deferred', writeBehind: { delayMs: 60_000, maxKeys: 1_000, maxBytes: 1 << 20 } });
    file = LmdbEngine.attach({ directory: dir, commits: 'deferred' });
    try {
      engine.write((writer) => writer.put(key(2), Uint8Array.of(2)));
      assert.equal(await fileHas(file, key(2)), undefined);
      await engine.checkpoint();
      assert.deepEqual(await fileHas(file, key(2)), Buffer.of(2), 'a checkpoint commits what is held');

      engine.write((writer) => {
        for (let n = 10; n < 10 + 1_000; n++) writer.put(Uint8Array.of(0x6c, n >> 8, n & 0xff), Uint8Array.of(1));
      });
      assert.deepEqual(await fileHas(file, Uint8Array.of(0x6c, 0, 10)), Buffer.of(1), 'past maxKeys a write commits at once');

      engine.write((writer) => writer.delete(key(1)));
      assert.equal(engine.get(key(1)), undefined);
      assert.deepEqual(await fileHas(file, key(1)), Buffer.of(1));
    } finally {
      await file.close();
      await engine.close();
    }
    const reopened = LmdbEngine.open({ directory: dir, commits: 'deferred' });
    try {
      assert.equal(reopened.get(key(1)), undefined, 'close committed the held deletion');
      assert.deepEqual(reopened.get(key(2)), Buffer.of(2));
    } finally {
      await reopened.close();
    }
  });
});
