// The restore bench's backup (bench/synthetic-backup.ts): a real snapshot stream of exactly
// the scale keys 0..N-1 with the scale value, which `baton snapshot restore` reads like any backup.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareBytes, decodeSnapshot } from '../../../src/mvcc/index.js';
import { scaleKey, scaleValue } from '../../../src/bench/scale-keys.js';
import { writeSyntheticBackup } from '../../../bench/synthetic-backup.js';
import { openBackupFile } from '../../../src/snap/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { MvccStore } from '../../../src/mvcc/index.js';

test('a synthetic backup holds every scale key 0..N-1 with the scale value, and restores', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-synthetic-'));
  try {
    const keys = 5_000;
    const made = await writeSyntheticBackup(join(dir, 'b.snap'), keys, dir);
    const backup = openBackupFile(made.file);
    assert.equal(backup.framing, 'baton');
    const engine = LmdbEngine.open({ directory: join(dir, 'restored') });
    try {
      const store = new MvccStore(engine);
      store.restore(backup.chunks());
      assert.equal(store.appliedIndex, keys);
      const held = store.range({ type: 'get', key: '/scale/', rangeEnd: Buffer.from('/scale0'), countOnly: true });
      assert.equal(held.count, keys);
      for (const i of [0, 1, 2_499, keys - 1]) {
        const kv = store.range({ type: 'get', key: scaleKey(i) }).kvs[0];
        assert.ok(kv !== undefined, `key ${i}`);
        assert.deepEqual(Buffer.from(kv.value), scaleValue);
      }
      // Every engine entry of the stream came in key order (the store was built at its right edge).
      let previous: Uint8Array | null = null;
      for (const { key } of decodeSnapshot(backup.chunks())) {
        if (previous !== null) assert.ok(compareBytes(previous, key) < 0);
        previous = key;
      }
    } finally {
      await engine.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
