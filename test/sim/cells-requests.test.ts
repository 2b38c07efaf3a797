// Request-IDs across moves in the cells world (issue 24): each cell's clock runs up to two hours
// apart from the others' (so are their dedup clocks), and clients send writes again with their
// Request-ID: those of unknown outcome, and a share of applied puts (an answer lost), often across
// a move. A Request-ID writes once in whichever cell (the cells' check), and a put sent again
// answers its first revision (the clients'). Teeth: moved records not re-stamped into the
// destination's clock (expired there at once), or a move back listing the records from a clock
// read a minute late (missing those written since the arrival), and the checkers fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulateCells, type CellsBugs, type CellsResult } from '../../src/sim/cells/index.js';

const requestChecks = ['a Request-ID writes once', 'a retry gets the first outcome'];

function describe(result: CellsResult): string {
  const first = result.violations[0];
  return first === undefined ? 'clean' : `${first.invariant}: ${first.detail.split('\n')[0] ?? ''}`;
}

async function firstCaught(bugs: CellsBugs, budget: number): Promise<bigint | null> {
  for (let seed = 1n; seed <= BigInt(budget); seed++) {
    const result = await simulateCells({ seed, bugs });
    if (result.violations.some((v) => requestChecks.includes(v.invariant))) return seed;
  }
  return null;
}

test('writes sent again across moves between cells whose clocks run hours apart apply once and answer their first outcome', async () => {
  let answered = 0;
  for (let seed = 1n; seed <= 8n; seed++) {
    const result = await simulateCells({ seed });
    assert.deepEqual(result.violations, [], `seed ${seed}: ${describe(result)}; reproduce with: npm run sim -- --world cells --seed ${seed} --trace`);
    answered += result.stats.retriesAnswered;
  }
  assert.ok(answered > 50, `${answered} writes sent again were answered`);
});

test('teeth: records moved with the source\'s stamps expire at once where the clock runs ahead, and a retry applies twice', async () => {
  // Caught at seeds 1, 13, 18, 19, 20 of the first 20 (session 30).
  const caught = await firstCaught({ skipRestamp: true }, 6);
  assert.ok(caught !== null, 'moving records without re-stamping them is caught within 6 seeds');
});

test('teeth: a move back listing from a dedup clock read late misses records written since the arrival', async () => {
  // Caught at seeds 4, 10, 11, 15, 16 of the first 20 (session 30).
  const caught = await firstCaught({ lateDedupClock: true }, 8);
  assert.ok(caught !== null, 'listing from a late clock read is caught within 8 seeds');
});
