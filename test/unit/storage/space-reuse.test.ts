// Space freed by deletes and compaction is reused (issue 22), on a real MvccStore over LMDB: after
// loading 100,000 keys (32-byte keys, 256-byte values), deleting half, compacting and writing the
// same volume again under new names, the rewrite fits in the freed space, and a second cycle does
// not grow the file at all: no defrag and no NOSPACE state are needed for the store to track live
// data. Pages are counted, not timed (the pause figures are the bench's: `npm run bench:bytes --
// --reuse`, bench/space-reuse.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { measureSpaceReuse } from '../../../bench/space-reuse.js';
import { withTempDir } from './temp-dir.js';

test('deleted and compacted space is reused: rewrites fit in it, a second cycle grows nothing', { timeout: 120_000 }, async () => {
  await withTempDir(async (dir) => {
    const keyCount = 100_000;
    const result = await measureSpaceReuse({ directory: join(dir, 'db'), keyCount, batchEntries: 64, cycles: 2 });
    const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
    const story = [result.afterLoad, ...result.cycles.flatMap((c) => [c.afterDelete, c.afterCompaction, c.afterRewrite])]
      .map((f) => `${mib(f.fileBytes)} (${f.liveKeys} keys)`).join(' -> ');
    assert.equal(result.compactionPending, false, 'compaction finished');
    for (const cycle of result.cycles) {
      assert.equal(cycle.afterRewrite.liveKeys, keyCount);
      assert.ok(cycle.rewriteGrowth <= 1.1, `a rewrite grew the file ${cycle.rewriteGrowth.toFixed(3)}x: ${story}`);
    }
    assert.ok(result.steadyGrowth <= 1.1, `the second cycle grew the file ${result.steadyGrowth.toFixed(3)}x: ${story}`);
  });
});
