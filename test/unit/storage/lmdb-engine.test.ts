// The LMDB engine against the in-memory one as an ordered map: random keys (many longer than
// LMDB's key limit, sharing overflow buckets), random ranges, aborts that must leave nothing,
// and an atomic replaceAll.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom, chance, randomInt, type Random } from '../../../src/base/random.js';
import { MemoryEngine, compareBytes } from '../../../src/mvcc/index.js';
import type { KvEngine } from '../../../src/mvcc/index.js';
import { LmdbEngine, inlineKeyBytesMax } from '../../../src/storage/index.js';
import { withTempDir } from './temp-dir.js';
import { assertSameContents, dump, randomWrites, writeToEach } from './engine-writes.js';

function randomKey(random: Random): Uint8Array {
  const long = chance(random, 0.4);
  const length = long ? inlineKeyBytesMax + randomInt(random, -2, 140) : randomInt(random, 1, 6);
  const out = new Uint8Array(length).fill(0x61);
  // Vary a few positions, near the start and near the bucket boundary.
  for (const at of [0, 1, inlineKeyBytesMax - 1, inlineKeyBytesMax, length - 1]) {
    if (at >= 0 && at < length && chance(random, 0.5)) out[at] = pick3(random);
  }
  return out;
}

function pick3(random: Random): number {
  return [0x00, 0x61, 0xff][randomInt(random, 0, 2)] as number;
}

test('LMDB engine orders, reads and ranges exactly like the memory engine, long keys included', async () => {
  await withTempDir(async (dir) => {
    const lmdb = LmdbEngine.open({ directory: dir });
    const memory = new MemoryEngine();
    const random = new SeededRandom(7n);
    try {
      for (let round = 0; round < 40; round++) {
        writeToEach([lmdb, memory], randomWrites(random, round, randomKey));
        for (let i = 0; i < 10; i++) {
          const [start, end] = [randomKey(random), randomKey(random)].sort(compareBytes) as [Uint8Array, Uint8Array];
          assert.deepEqual(dump(lmdb, { start, end }), dump(memory, { start, end }));
          const probe = randomKey(random);
          assert.deepEqual(lmdb.get(probe), memory.get(probe) === undefined ? undefined : Buffer.from(memory.get(probe) as Uint8Array));
        }
      }
      assertSameContents(lmdb, memory, inlineKeyBytesMax + 300);
    } finally {
      await lmdb.close();
    }
  });
});

test('a throwing write keeps nothing; a throwing replaceAll keeps the old content', async () => {
  await withTempDir(async (dir) => {
    const lmdb = LmdbEngine.open({ directory: dir });
    try {
      for (const engine of [lmdb, new MemoryEngine()] as KvEngine[]) {
        const long = new Uint8Array(inlineKeyBytesMax + 10).fill(0x62);
        engine.write((writer) => writer.put(Uint8Array.of(1), Uint8Array.of(1)));
        assert.throws(() =>
          engine.write((writer) => {
            writer.put(Uint8Array.of(2), Uint8Array.of(2));
            writer.put(long, Uint8Array.of(3));
            writer.delete(Uint8Array.of(1));
            throw new Error('crash');
          }),
        );
        const everything = { start: new Uint8Array(0), end: Uint8Array.of(0xff) };
        assert.deepEqual(dump(engine, everything), ['01=01']);
        function* failing(): Generator<{ key: Uint8Array; value: Uint8Array }> {
          yield { key: Uint8Array.of(9), value: Uint8Array.of(9) };
          throw new Error('torn snapshot');
        }
        assert.throws(() => engine.replaceAll(failing()), /torn snapshot/);
        assert.deepEqual(dump(engine, everything), ['01=01']);
        engine.replaceAll([{ key: Uint8Array.of(5), value: Uint8Array.of(5) }]);
        assert.deepEqual(dump(engine, everything), ['05=05']);
      }
    } finally {
      await lmdb.close();
    }
  });
});

test('replaceAll holds the same content whatever the order of its entries (appends while a key is above the rest)', async () => {
  await withTempDir(async (dir) => {
    const random = new SeededRandom(11n);
    const byKey = new Map<string, { key: Uint8Array; value: Uint8Array }>();
    for (let i = 0; i < 600; i++) {
      const key = randomKey(random);
      byKey.set(Buffer.from(key).toString('hex'), { key, value: Uint8Array.of(i & 0xff, i >> 8) });
    }
    const sorted = [...byKey.values()].sort((a, b) => compareBytes(a.key, b.key));
    const memory = new MemoryEngine();
    memory.replaceAll(sorted);
    const all = { start: new Uint8Array(0), end: new Uint8Array(inlineKeyBytesMax + 300).fill(0xff) };
    const expected = dump(memory, all);
    // In order (a snapshot: every short key appended), reversed (none), and shuffled (some).
    const shuffled = [...sorted];
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = randomInt(random, 0, i);
      [shuffled[i], shuffled[j]] = [shuffled[j] as typeof sorted[number], shuffled[i] as typeof sorted[number]];
    }
    let run = 0;
    for (const order of [sorted, [...sorted].reverse(), shuffled]) {
      const lmdb = LmdbEngine.open({ directory: `${dir}/${run++}` });
      try {
        lmdb.write((writer) => writer.put(Uint8Array.of(0xff, 0xff), Uint8Array.of(1))); // replaced, not kept
        lmdb.replaceAll(order);
        assert.deepEqual(dump(lmdb, all), expected);
        for (const { key, value } of sorted) assert.deepEqual(lmdb.get(key), Buffer.from(value));
      } finally {
        await lmdb.close();
      }
    }
  });
});
