// The snapshot thread writes a node's snapshot from a read view of its own, while the main thread
// keeps applying: the file must hold exactly the state at the index the view reported (and the
// metadata the log gave for it), under its final name only once complete. A view that needs no
// snapshot writes nothing and leaves the thread ready for the next one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { MemoryEngine, MvccStore } from '../../../src/mvcc/index.js';
import type { Entry, SnapshotMeta } from '../../../src/raft/index.js';
import { SnapshotThread } from '../../../src/snap/snapshot-thread.js';
import { SnapshotStore } from '../../../src/snap/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { generateWorkload, testLimits } from '../mvcc/workload.js';
import { withTempDir } from '../storage/temp-dir.js';

const confState = { voters: [1, 2, 3], votersOutgoing: [], learners: [] };

function metaFrom(entries: readonly Entry[], index: number): SnapshotMeta {
  const entry = entries[index - 1];
  assert.ok(entry !== undefined && entry.index === index);
  return { index, term: entry.term, confState };
}

/** A deferred-commit LMDB store in `dir`/db and a snapshot thread on it writing to `dir`/snap. */
function openWithThread(dir: string): { engine: LmdbEngine; thread: SnapshotThread } {
  const dbDirectory = join(dir, 'db');
  const engine = LmdbEngine.open({ directory: dbDirectory, commits: 'deferred' });
  return { engine, thread: SnapshotThread.start({ dbDirectory, commits: engine.commits, dataDir: dir }) };
}

test('a snapshot written by the thread is the state at the index its view saw, while applies go on', async () => {
  await withTempDir(async (dir) => {
    const entries = generateWorkload(77n, 4000).map((item) => item.entry);
    const { engine, thread } = openWithThread(dir);
    try {
      const store = new MvccStore(engine, testLimits);
      store.applyBatch(entries.slice(0, 1000));
      // The state after each batch, by applied index: the file must match one of them exactly.
      const hashes = new Map<number, string>([[1000, store.hash({ includeAppliedIndex: true })]]);
      let asked = -1;
      const written = thread.snapshot((index) => {
        asked = index;
        return metaFrom(entries, index);
      });
      let done = false;
      void written.finally(() => (done = true));
      for (let at = 1000; at < entries.length && !done; at += 25) {
        store.applyBatch(entries.slice(at, at + 25));
        hashes.set(store.appliedIndex, store.hash({ includeAppliedIndex: true }));
        await turn();
      }
      const result = await written;
      assert.ok(result !== null);
      const { meta } = result;
      assert.equal(meta.index, asked);
      assert.ok(meta.index >= 1000, 'the view is no older than the request');
      const file = await new SnapshotStore(dir).load(new SnapshotStore(dir).pathOf(meta));
      assert.deepEqual(file.meta, meta);
      const restored = new MvccStore(new MemoryEngine(), testLimits);
      restored.restore([file.data]);
      assert.equal(restored.appliedIndex, meta.index);
      assert.equal(restored.hash({ includeAppliedIndex: true }), hashes.get(meta.index));
      const path = new SnapshotStore(dir).pathOf(meta);
      assert.deepEqual(readdirSync(join(dir, 'snap')), [path.split('/').at(-1)]);
      assert.equal(result.bytes, statSync(path).size);
    } finally {
      await thread.close();
      await engine.close();
    }
  });
});

test('a view that needs no snapshot writes nothing; the next request works; close ends the thread', async () => {
  await withTempDir(async (dir) => {
    const entries = generateWorkload(78n, 300).map((item) => item.entry);
    const { engine, thread } = openWithThread(dir);
    try {
      const store = new MvccStore(engine, testLimits);
      store.applyBatch(entries.slice(0, 200));
      assert.equal(await thread.snapshot(() => null), null);
      assert.ok(!existsSync(join(dir, 'snap')) || readdirSync(join(dir, 'snap')).length === 0);
      store.applyBatch(entries.slice(200));
      const written = await thread.snapshot((index) => metaFrom(entries, index));
      assert.equal(written?.meta.index, 300);
      // A view the log disagrees with (another term at that index) fails the snapshot, loudly.
      await assert.rejects(
        thread.snapshot((index) => ({ ...metaFrom(entries, index), term: 999 })),
        /snapshot view matches the log/,
      );
    } finally {
      await thread.close();
      await engine.close();
    }
    await assert.rejects(thread.snapshot(() => null), /closed|snapshot view/);
  });
});
