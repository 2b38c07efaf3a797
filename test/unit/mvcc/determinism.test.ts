// Determinism and snapshots: stores fed the same entries in different batchings have the same
// content hash; a snapshot restored into a fresh store gives the same hash, the same answers and
// the same next snapshot bytes; re-chunking a stream is harmless; a damaged stream is refused and
// leaves the store as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { crc32 } from '../../../src/base/crc32.js';
import { CorruptFileError } from '../../../src/base/errors.js';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import { MemoryEngine, MvccStore, decodeSnapshot, encodeSnapshot } from '../../../src/mvcc/index.js';
import { ContentHasher } from '../../../src/mvcc/content-hash.js';
import { batches, generateWorkload, testLimits } from './workload.js';

function concat(chunks: Iterable<Uint8Array>): Uint8Array {
  return Buffer.concat([...chunks].map((chunk) => Buffer.from(chunk)));
}

function fedStore(seed: bigint, count: number, batchSizeMax: number): MvccStore {
  const store = new MvccStore(new MemoryEngine(), testLimits);
  const entries = generateWorkload(seed, count).map((item) => item.entry);
  for (const batch of batches(new SeededRandom(BigInt(batchSizeMax)), entries, batchSizeMax)) {
    store.applyBatch(batch);
  }
  return store;
}

test('the same entries give the same hash, however they are batched', () => {
  for (const seed of [1n, 2n, 3n]) {
    const hashes = [1, 5, 50, 1000].map((size) => fedStore(seed, 400, size).hash({ includeAppliedIndex: true }));
    assert.equal(new Set(hashes).size, 1, `seed ${seed}: ${hashes.join(' ')}`);
  }
  assert.notEqual(fedStore(1n, 400, 5).hash(), fedStore(2n, 400, 5).hash());
  assert.notEqual(fedStore(1n, 300, 5).hash(), fedStore(1n, 400, 5).hash(), 'later entries changed state');
});

test('snapshot then restore gives the same hash, answers and snapshot bytes', () => {
  const source = fedStore(7n, 500, 20);
  const snapshot = source.snapshot({ chunkBytesMax: 512 });
  assert.equal(snapshot.appliedIndex, 500);
  const chunks = [...snapshot.chunks];
  assert.ok(chunks.length > 3, 'bounded chunks');
  const target = new MvccStore(new MemoryEngine(), testLimits);
  target.restore(chunks);
  assert.equal(target.appliedIndex, 500);
  assert.equal(target.revision, source.revision);
  assert.equal(target.compactRevision, source.compactRevision);
  assert.equal(target.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
  assert.deepEqual(concat(target.snapshot().chunks), concat(source.snapshot().chunks));
  assert.deepEqual(target.range({ type: 'get', key: '/', prefix: true }), source.range({ type: 'get', key: '/', prefix: true }));
  // Both continue identically from the snapshot's index.
  const more = generateWorkload(7n, 700).slice(500).map((item) => item.entry);
  source.applyBatch(more);
  target.applyBatch(more);
  assert.equal(target.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
});

test('a snapshot taken before later writes still shows the state at its applied index', () => {
  const store = fedStore(8n, 300, 10);
  const before = store.hash({ includeAppliedIndex: true });
  const snapshot = store.snapshot({ chunkBytesMax: 256 });
  store.applyBatch(generateWorkload(8n, 400).slice(300).map((item) => item.entry));
  const target = new MvccStore(new MemoryEngine(), testLimits);
  target.restore(snapshot.chunks);
  assert.equal(target.hash({ includeAppliedIndex: true }), before);
});

test('re-chunked streams restore; damaged or truncated ones are refused and change nothing', () => {
  const source = fedStore(9n, 200, 10);
  const bytes = concat(source.snapshot().chunks);
  const rechunked: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += 7) rechunked.push(bytes.subarray(i, i + 7));
  const target = new MvccStore(new MemoryEngine(), testLimits);
  target.restore(rechunked);
  assert.equal(target.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));

  const victim = fedStore(10n, 50, 10);
  const victimHash = victim.hash({ includeAppliedIndex: true });
  const flipped = Uint8Array.from(bytes);
  const middle = Math.floor(bytes.length / 2);
  flipped[middle] = (flipped[middle] as number) ^ 0x40;
  for (const damaged of [flipped, bytes.subarray(0, bytes.length - 5), bytes.subarray(0, 100)]) {
    assert.throws(() => victim.restore([damaged]), CorruptFileError);
    assert.equal(victim.hash({ includeAppliedIndex: true }), victimHash);
    assert.equal(victim.appliedIndex, 50);
  }
});

test('any cut of a stream into chunks decodes the same; a flipped byte anywhere is caught', () => {
  // Whole records are read in place and checksummed a run at a time, records cut by a chunk's end
  // piece by piece: every mix of the two must give the same entries and the same verdict.
  const source = fedStore(12n, 120, 10);
  const bytes = concat(source.snapshot().chunks);
  const expected = source.hash({ includeAppliedIndex: true });
  const random = new SeededRandom(13n);
  for (const size of [1, 3, 8, 9, 17, 64, 300, 4096, bytes.length]) {
    const cuts: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; ) {
      const step = Math.max(1, size + randomInt(random, -Math.floor(size / 2), Math.floor(size / 2)));
      cuts.push(bytes.subarray(i, i + step));
      i += step;
    }
    const target = new MvccStore(new MemoryEngine(), testLimits);
    target.restore(cuts);
    assert.equal(target.hash({ includeAppliedIndex: true }), expected, `chunks of about ${size} bytes`);
  }
  for (let trial = 0; trial < 40; trial++) {
    const flipped = Uint8Array.from(bytes);
    const at = randomInt(random, 5, bytes.length - 1);
    flipped[at] = (flipped[at] as number) ^ (1 << randomInt(random, 0, 7));
    const size = [7, 300, bytes.length][trial % 3] as number;
    const cuts: Uint8Array[] = [];
    for (let i = 0; i < flipped.length; i += size) cuts.push(flipped.subarray(i, i + size));
    assert.throws(() => [...decodeSnapshot(cuts)], CorruptFileError, `byte ${at} flipped, chunks of ${size}`);
  }
});

test('a format-1 stream (the FNV checksum of earlier versions) still restores; damage to it is caught', () => {
  const source = fedStore(11n, 300, 10);
  const entries = [...new MemoryEngineView(source).entries()];
  const old = concat(encodeSnapshotFormat1(entries));
  assert.equal(old[4], 1, 'format byte');
  const target = new MvccStore(new MemoryEngine(), testLimits);
  target.restore([old]);
  assert.equal(target.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
  const flipped = Uint8Array.from(old);
  const middle = Math.floor(old.length / 2);
  flipped[middle] = (flipped[middle] as number) ^ 0x01;
  assert.throws(() => new MvccStore(new MemoryEngine(), testLimits).restore([flipped]), CorruptFileError);
});

test('entries larger than a chunk get a chunk of their own; the stream still round-trips', () => {
  const entries = [
    { key: Uint8Array.of(1), value: new Uint8Array(10).fill(1) },
    { key: Uint8Array.of(2), value: new Uint8Array(5000).fill(2) },
    { key: Uint8Array.of(3), value: new Uint8Array(3).fill(3) },
  ];
  for (const chunkBytesMax of [1, 64, 4096, 1 << 20]) {
    const chunks = [...encodeSnapshot(entries, chunkBytesMax)];
    for (const chunk of chunks.slice(0, -1)) {
      assert.ok(chunk.length <= Math.max(chunkBytesMax, 21, 5009), `chunk of ${chunk.length} bytes`);
    }
    const back = [...decodeSnapshot(chunks)];
    assert.deepEqual(back.map((e) => [...e.key]), [[1], [2], [3]]);
    assert.deepEqual(back.map((e) => e.value.length), [10, 5000, 3]);
  }
});

test('crc32 matches zlib on any split of any bytes', () => {
  const random = new SeededRandom(5n);
  for (let round = 0; round < 200; round++) {
    const bytes = new Uint8Array(randomInt(random, 0, 300));
    for (let i = 0; i < bytes.length; i++) bytes[i] = randomInt(random, 0, 255);
    const cut = randomInt(random, 0, bytes.length);
    assert.equal(crc32(bytes), zlibCrc32(bytes));
    assert.equal(crc32(bytes.subarray(cut), crc32(bytes.subarray(0, cut))), zlibCrc32(bytes));
  }
});

/** Every engine entry of a store, in key order (what a snapshot carries). */
class MemoryEngineView {
  constructor(private readonly store: MvccStore) {}
  *entries(): Generator<{ key: Uint8Array; value: Uint8Array }> {
    const target = new MemoryEngine();
    new MvccStore(target, testLimits).restore(this.store.snapshot().chunks);
    yield* target.snapshotEntries();
  }
}

/** A format-1 stream as earlier versions wrote it: "BTSN" 1, records, end with an FNV checksum. */
function* encodeSnapshotFormat1(entries: Iterable<{ key: Uint8Array; value: Uint8Array }>): Generator<Uint8Array> {
  const hasher = new ContentHasher();
  const u32 = (value: number): Uint8Array => {
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setUint32(0, value);
    return bytes;
  };
  yield Uint8Array.of(0x42, 0x54, 0x53, 0x4e, 1);
  let count = 0;
  for (const entry of entries) {
    for (const part of [u32(entry.key.length), entry.key, u32(entry.value.length), entry.value]) {
      hasher.update(part);
      yield part;
    }
    count++;
  }
  yield Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0);
  yield u32(count);
  yield u32(hasher.digest32());
}
