// Space freed by deletes and compaction is reused (issue 22), on a real MvccStore over LMDB with
// deferred commits and checkpoints (every 500 entries, as bench/space-reuse.ts by default): after
// loading 100,000 keys (32-byte keys, 256-byte values), deleting half and compacting, writing the
// same volume again under new names fits in the freed pages; no defrag and no NOSPACE state are
// needed. Pages are counted, not timed; later cycles (the file stays flat) and the pause figures
// are the bench's: `npm run bench:bytes -- --reuse`. On tmpfs where there is one: the page counts
// are the same on disk (measured), only the checkpoints' fdatasyncs are slower there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measureSpaceReuse } from '../../../bench/space-reuse.js';

test('deleted and compacted space is reused: the same volume written again fits in it', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'baton-space-reuse-'));
  try {
    const keyCount = 100_000;
    const result = await measureSpaceReuse({
      directory: join(dir, 'db'), keyCount, batchEntries: 64, cycles: 1, checkpoints: { type: 'entries', entries: 500 },
    });
    const cycle = result.cycles[0];
    assert.ok(cycle !== undefined);
    const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
    const story = [result.afterLoad, cycle.afterDelete, cycle.afterCompaction, cycle.afterRewrite]
      .map((f) => `${mib(f.fileBytes)} (${f.liveKeys} keys)`).join(' -> ');
    assert.equal(result.compactionPending, false, 'compaction finished');
    assert.equal(cycle.afterRewrite.liveKeys, keyCount);
    assert.ok(cycle.rewriteGrowth <= 1.1, `the rewrite grew the file ${cycle.rewriteGrowth.toFixed(3)}x: ${story}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
