// Checker (4) of the cells world: a watcher per namespace on the members' production watch hubs,
// ended by the source at each move's fence (wrong_cell) and resumed at the destination, held to
// the namespace's history across cells. It has teeth (a hub that drops events at a cut history
// read is caught at once), and it runs clean on seeds clear of the bugs it found, which are open
// (outside the simulator) and kept here as `todo` tests that pass once they are fixed. Fixed: the
// store asserted while reading history after a move's release cleared a namespace's keys (a
// format-2 put event took its value from the key's current record: src/mvcc/import-keys.ts
// keepLastPutValue). Open:
//  - a watch ended by a move claims the revision of the member's latest ownership change, not the
//    namespace's fence, when that member took the fence after the watch began or with later
//    entries in one batch: the destination's first events are skipped;
//  - a watch resumed (after a crash, not a move's end) at the new owner from a revision at or
//    below the fence misses the source's last events (documented in cells.md, not refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulateCells, type CellsResult } from '../../src/sim/cells/index.js';

function describe(result: CellsResult): string {
  return result.violations.map((v) => `${v.invariant}: ${v.detail.split('\n')[0] ?? ''}`).join(' | ') || 'clean';
}

test('watches follow namespaces across moves with no gap or duplicate (seeds clear of the open bugs)', async () => {
  let endedByMoves = 0;
  for (const seed of [2n, 4n, 6n, 7n]) {
    const result = await simulateCells({ seed, watches: true });
    assert.deepEqual(result.violations, [], `seed ${seed}: ${describe(result)}; reproduce with: npm run sim -- --world cells --watches --seed ${seed} --trace`);
    endedByMoves += result.stats.watchesEndedByMoves;
  }
  assert.ok(endedByMoves > 0, 'some watches were ended by a move and resumed at the destination');
});

test('teeth: a hub that loses the revision it cut a history read at is caught', async () => {
  const result = await simulateCells({ seed: 1n, watches: true, watchBugs: { skipCutRevision: true } });
  assert.ok(result.violations.some((v) => v.invariant === 'watch sequences per namespace exact'), describe(result));
});

test('history reads after a move released a namespace (the store asserted: fixed)', async () => {
  const result = await simulateCells({ seed: 1n, watches: true });
  assert.deepEqual(result.violations, [], describe(result));
});

test('open: a watch ended by a move claims a later revision than the fence', { todo: 'src/watch hub endMoved / watch-service: the fence revision per namespace' }, async () => {
  // Seen with the simulator's own move driver (its timing puts a lagging source member there).
  const result = await simulateCells({ seed: 8n, watches: true, mover: 'sim' });
  assert.deepEqual(result.violations, [], describe(result));
});

test('open: a watch resumed at the new owner from before the fence', { todo: 'cells.md: the destination does not refuse a start at or below its floor' }, async () => {
  const result = await simulateCells({ seed: 12n, watches: true });
  assert.deepEqual(result.violations, [], describe(result));
});
