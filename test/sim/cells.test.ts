// The cells world (issue 24, src/sim/cells): two data cells and a control cell of three members
// each, the control plane's own Mover moving namespaces back and forth under each cell's nemesis
// while clients write through a routing layer.
// The mover's source feed runs on the members' watch hubs (the default since session 28).
// A sweep runs clean (one writer per namespace at every instant, revisions and lock tokens only
// growing per namespace across cells, no acknowledged write lost) and replays exactly; with the
// fence or the revision floor left out of the moves, the checkers fail within a few seeds, both
// the cells' apply-side checks and, switched off, the clients' own checks on what they were told.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seedsToRun } from '../../src/sim/index.js';
import { simulateCells, type CellsOptions, type CellsResult } from '../../src/sim/cells/index.js';

const sweep = seedsToRun({ fallback: Array.from({ length: 10 }, (_, i) => BigInt(i + 1)), env: process.env });

function describe(result: CellsResult): string {
  const first = result.violations[0];
  return first === undefined ? 'clean' : `${first.invariant}: ${first.detail.split('\n')[0] ?? ''}`;
}

/** The first seed of 1..budget whose run reports one of `invariants`, or null. */
async function firstCaught(options: Omit<CellsOptions, 'seed'>, invariants: readonly string[], budget: number): Promise<{ seed: bigint; result: CellsResult } | null> {
  for (let seed = 1n; seed <= BigInt(budget); seed++) {
    const result = await simulateCells({ ...options, seed });
    if (result.violations.some((v) => invariants.includes(v.invariant))) return { seed, result };
  }
  return null;
}

test('namespaces move between cells under faults and every checker holds', async () => {
  let released = 0;
  let acknowledged = 0;
  for (const seed of sweep) {
    const result = await simulateCells({ seed });
    assert.deepEqual(result.violations, [], `seed ${seed}: ${describe(result)}; reproduce with: npm run sim -- --world cells --seed ${seed} --trace`);
    assert.ok(result.stats.writesAcknowledged > 0, `seed ${seed}: clients wrote`);
    released += result.stats.movesReleased;
    acknowledged += result.stats.writesAcknowledged;
  }
  // Each seed moves namespaces (a few abort under faults, most complete).
  assert.ok(released >= sweep.length, `${released} moves released over ${sweep.length} seeds`);
  console.log(`cells sweep: ${sweep.length} seeds, ${released} moves released, ${acknowledged} writes acknowledged, 0 violations`);
});

test('the simulator\'s own move driver (the same commands, in order) runs clean too', async () => {
  for (const seed of [1n, 2n, 3n]) {
    const result = await simulateCells({ seed, mover: 'sim' });
    assert.deepEqual(result.violations, [], `seed ${seed}: ${describe(result)}; reproduce with: npm run sim -- --world cells --mover sim --seed ${seed} --trace`);
    assert.ok(result.stats.movesReleased > 0, `seed ${seed} moves namespaces`);
  }
});

test('a cells seed replays exactly', async () => {
  const one = await simulateCells({ seed: 9n });
  const two = await simulateCells({ seed: 9n });
  assert.deepEqual(
    { steps: two.steps, timeMs: two.timeMs, stats: two.stats, windows: two.windowsMs },
    { steps: one.steps, timeMs: one.timeMs, stats: one.stats, windows: one.windowsMs },
  );
  assert.ok(one.stats.movesReleased > 0, 'seed 9 moves namespaces');
});

test('teeth: a move without the fence leaves two cells accepting writes', async () => {
  const caught = await firstCaught({ bugs: { skipFence: true } }, ['one writer per namespace'], 5);
  assert.ok(caught !== null, 'skipping the fence is caught within 5 seeds');
  const clean = await simulateCells({ seed: caught.seed });
  assert.deepEqual(clean.violations, [], `seed ${caught.seed} runs clean with the fence: ${describe(clean)}`);
});

test('teeth: a move without the revision floor lets the destination reuse revisions', async () => {
  const caught = await firstCaught({ bugs: { skipFloor: true } }, ['revision floor', 'revisions grow per namespace'], 8);
  assert.ok(caught !== null, 'skipping the floor is caught within 8 seeds');
  const clean = await simulateCells({ seed: caught.seed });
  assert.deepEqual(clean.violations, [], `seed ${caught.seed} runs clean with the floor: ${describe(clean)}`);
});

test('teeth: the clients\' own checkers catch both broken moves', async () => {
  const clientChecks = ['no acknowledged write lost', 'tokens grow per namespace'];
  // Without the feed: with it, a move whose fence is skipped waits for a feed end that never
  // comes and lands from a read; the cells' own checks catch that (above), the clients' checks
  // did not within 40 seeds. Without it they do at seed 1.
  const fence = await firstCaught({ bugs: { skipFence: true }, ownerChecks: false, feed: false }, clientChecks, 8);
  assert.ok(fence !== null, 'without the fence, a client sees a lost write or a token going back');
  // Calm cells, without the feed: a client sees a revision go back only when it writes on both
  // sides of a move that landed, and each schedule shift moves which seeds do. Under drawn faults
  // 3 seeds of 60 showed it (36, 54, 56; session 30, after the mover's one more read before the
  // fence moved them from 6, 20, 24); calm, 10 of 40 (3, 4, 6, 7, 8, ...).
  const floor = await firstCaught({ bugs: { skipFloor: true }, ownerChecks: false, feed: false, profile: 'calm' }, ['tokens grow per namespace'], 12);
  assert.ok(floor !== null, 'without the floor, a client is acknowledged a revision below one it saw before');
});

test('with the source feed (the default) on the seeds that found its holes, the checkers hold', async () => {
  // 29090, 29113, 29120, 29156: a flip whose compare-and-set was lost after the feed's last
  // changes were taken; the retry landed without them (acknowledged writes lost) until the
  // mover dropped the feed on a failed flip as on a failed landing. 29333: the feed's watch on a
  // member behind its start ended at the fence without its start..fence (src/watch/hub.ts endMoved).
  let released = 0;
  for (const seed of [1n, 2n, 3n, 4n, 5n, 29090n, 29113n, 29333n]) {
    const result = await simulateCells({ seed, feed: true });
    assert.deepEqual(result.violations, [], `seed ${seed}: ${describe(result)}; reproduce with: npm run sim -- --world cells --feed --seed ${seed} --trace`);
    released += result.stats.movesReleased;
  }
  assert.ok(released >= 7, `${released} moves released`);
});

test('a namespace and one nested in it move apart and every checker holds', async () => {
  const namespaces = ['/a/', '/a/n/', '/b/', '/c/'];
  for (const seed of [1n, 2n, 3n, 4n, 5n]) {
    const result = await simulateCells({ seed, namespaces, feed: true });
    assert.deepEqual(result.violations, [], `seed ${seed}: ${describe(result)}; reproduce with: npm run sim -- --world cells --nested --feed --seed ${seed} --trace`);
  }
  // 29904: the feed's watch was taken by a member replaying the log from the start; its hub ended
  // it at the nested namespace's old fence (revision 4), long before the move's own fence, and the
  // mover landed without the namespace's later writes, until it checked the end against the
  // source's answer to the fence.
  const replaying = await simulateCells({ seed: 29904n, namespaces, feed: true, watches: true });
  assert.deepEqual(replaying.violations, [], `seed 29904: ${describe(replaying)}; reproduce with: npm run sim -- --world cells --nested --feed --watches --seed 29904 --trace`);
});
