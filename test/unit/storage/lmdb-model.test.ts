// The same model-based property test as test/unit/mvcc/model.test.ts, on the durable LMDB engine
// (long keys go through its overflow buckets), plus a close/reopen in the middle: the reopened
// store reports the same applied index and state, and carries on identically.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MvccStore, MemoryEngine } from '../../../src/mvcc/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { runModelCheck } from '../mvcc/model-check.js';
import { generateWorkload, testLimits } from '../mvcc/workload.js';
import { withTempDir } from './temp-dir.js';

// Plain synced commits, and deferred ones with writes held back (storage/write-behind.ts; a size
// bound below the batches, so held sets commit mid-run as well as at close).
const engines = [
  { seeds: [11n, 12n, 13n], options: {} },
  { seeds: [31n, 32n], options: { commits: 'deferred', writeBehind: { delayMs: 10_000, maxKeys: 64, maxBytes: 1 << 20 } } },
] as const;

test('the store answers like the reference model (LMDB engine, with and without write-behind)', async () => {
  for (const { seeds, options } of engines) for (const seed of seeds) {
    await withTempDir(async (dir) => {
      const engine = LmdbEngine.open({ directory: dir, ...options });
      try {
        const store = runModelCheck({ seed, entryCount: 300, batchSizeMax: 24, engine });
        const memory = runModelCheck({ seed, entryCount: 300, batchSizeMax: 7, engine: new MemoryEngine() });
        assert.equal(store.hash({ includeAppliedIndex: true }), memory.hash({ includeAppliedIndex: true }));
      } finally {
        await engine.close();
      }
    });
  }
});

test('a reopened LMDB store has the same applied index and state, and continues alike', async () => {
  await withTempDir(async (dir) => {
    const items = generateWorkload(21n, 240);
    const entries = items.map((item) => item.entry);
    const reference = new MvccStore(new MemoryEngine(), testLimits);
    reference.applyBatch(entries.slice(0, 120));
    let engine = LmdbEngine.open({ directory: dir });
    new MvccStore(engine, testLimits).applyBatch(entries.slice(0, 120));
    await engine.close();
    engine = LmdbEngine.open({ directory: dir });
    try {
      const store = new MvccStore(engine, testLimits);
      assert.equal(store.appliedIndex, 120);
      assert.equal(store.hash({ includeAppliedIndex: true }), reference.hash({ includeAppliedIndex: true }));
      // A replay that overlaps what was applied skips the applied part: no double apply.
      assert.equal(store.applyBatch(entries.slice(100, 120)).length, 0);
      store.applyBatch(entries.slice(100));
      reference.applyBatch(entries.slice(120));
      assert.equal(store.hash({ includeAppliedIndex: true }), reference.hash({ includeAppliedIndex: true }));
    } finally {
      await engine.close();
    }
  });
});
