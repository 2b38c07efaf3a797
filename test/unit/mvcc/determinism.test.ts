// Determinism and snapshots: stores fed the same entries in different batchings have the same
// content hash; a snapshot restored into a fresh store gives the same hash, the same answers and
// the same next snapshot bytes; re-chunking a stream is harmless; a damaged stream is refused and
// leaves the store as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CorruptFileError } from '../../../src/base/errors.js';
import { SeededRandom } from '../../../src/base/random.js';
import { MemoryEngine, MvccStore } from '../../../src/mvcc/index.js';
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
