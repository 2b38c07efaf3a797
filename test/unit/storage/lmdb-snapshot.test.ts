// Snapshots across engines: an LMDB store's snapshot restores into a memory store and back into a
// fresh LMDB store with identical hashes and identical stream bytes; a snapshot stream stays
// consistent while applies continue; a failed restore leaves the LMDB store untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import { MemoryEngine, MvccStore } from '../../../src/mvcc/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { generateWorkload, testLimits } from '../mvcc/workload.js';
import { withTempDir } from './temp-dir.js';

function bytesOf(chunks: Iterable<Uint8Array>): Buffer {
  return Buffer.concat([...chunks].map((chunk) => Buffer.from(chunk)));
}

test('LMDB -> memory -> LMDB snapshots keep hash and bytes; a snapshot ignores later applies', async () => {
  await withTempDir(async (dir) => {
    const entries = generateWorkload(51n, 600).map((item) => item.entry);
    const first = LmdbEngine.open({ directory: join(dir, 'a') });
    const second = LmdbEngine.open({ directory: join(dir, 'b') });
    try {
      const source = new MvccStore(first, testLimits);
      source.applyBatch(entries.slice(0, 400));
      const expected = source.hash({ includeAppliedIndex: true });
      const snapshot = source.snapshot({ chunkBytesMax: 4096 });
      assert.equal(snapshot.appliedIndex, 400);
      const iterator = snapshot.chunks[Symbol.iterator]();
      const firstChunk = iterator.next();
      // Applies go on while the snapshot streams: it must still show index 400.
      source.applyBatch(entries.slice(400));
      const chunks = [firstChunk.value as Uint8Array];
      for (let next = iterator.next(); next.done !== true; next = iterator.next()) chunks.push(next.value);
      const memory = new MvccStore(new MemoryEngine(), testLimits);
      memory.restore(chunks);
      assert.equal(memory.hash({ includeAppliedIndex: true }), expected);
      const back = new MvccStore(second, testLimits);
      back.restore(memory.snapshot({ chunkBytesMax: 1000 }).chunks);
      assert.equal(back.hash({ includeAppliedIndex: true }), expected);
      assert.deepEqual(bytesOf(back.snapshot().chunks), bytesOf(chunks));
      // Restoring over existing content replaces it entirely; a damaged stream changes nothing.
      const whole = bytesOf(source.snapshot().chunks);
      back.restore([whole]);
      assert.equal(back.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
      assert.throws(() => back.restore([whole.subarray(0, whole.length - 3)]), CorruptFileError);
      assert.equal(back.appliedIndex, 600);
      assert.equal(back.hash({ includeAppliedIndex: true }), source.hash({ includeAppliedIndex: true }));
    } finally {
      await first.close();
      await second.close();
    }
  });
});

test('a large apply batch on deferred commits (puts, deletes, compaction in one transaction) commits', async () => {
  // With LMDB's writable map this batch aborted the process in mdb_freelist_save (see lmdb-engine.ts).
  await withTempDir(async (dir) => {
    const entries = generateWorkload(77n, 1300).map((item) => item.entry);
    const engine = LmdbEngine.open({ directory: join(dir, 'db'), commits: 'deferred' });
    try {
      const store = new MvccStore(engine, testLimits);
      store.applyBatch(entries.slice(0, 1000));
      for (let at = 1000; at < entries.length; at += 25) store.applyBatch(entries.slice(at, at + 25));
      const memory = new MvccStore(new MemoryEngine(), testLimits);
      memory.applyBatch(entries);
      assert.equal(store.hash({ includeAppliedIndex: true }), memory.hash({ includeAppliedIndex: true }));
    } finally {
      await engine.close();
    }
  });
});
