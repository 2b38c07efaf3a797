// The simulator has teeth: with each deliberately broken core behaviour switched on, it reports
// a violation from its own checkers (not just a core assertion) within a stated seed budget, and
// the seed that catches it runs clean once the bug is switched off again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RaftBugs } from '../../src/raft/index.js';
import type { Scenario, SimOptions } from '../../src/sim/index.js';
import { simulate } from '../../src/sim/index.js';

/**
 * Figure 8 needs a leader of an old term to come back, replicate its stale tail and die before
 * its own no-op spreads, then lose to a member with a newer tail. Leader churn on 5 voters with
 * small append batches over a long fault phase makes that happen within a few hundred seeds.
 */
const figure8: Partial<Scenario> = {
  voterCount: 5,
  learnerCount: 0,
  appendBytesMax: 64,
  inflightMessagesMax: 1,
  proposeBatchMax: 16,
  proposeIntervalMs: 3,
  faultIntervalMs: 400,
  leaderChurnRate: 0.9,
  faultPhaseMs: 8000,
  faultWeights: { partition: 1, crash: 1, pause: 1, membership: 0, transfer: 0 },
};

const coreAssertions = new Set(['assertion failed', 'exception']);

function firstCaught(bugs: RaftBugs, budget: number, options: Omit<SimOptions, 'seed' | 'bugs'>) {
  for (let seed = 1n; seed <= BigInt(budget); seed++) {
    const result = simulate({ ...options, seed, bugs });
    const caught = result.violations.find((v) => !coreAssertions.has(v.invariant));
    if (caught !== undefined) return { seed, invariant: caught.invariant };
  }
  return null;
}

function assertCaught(bugs: RaftBugs, budget: number, options: Omit<SimOptions, 'seed' | 'bugs'> = {}): void {
  const caught = firstCaught(bugs, budget, options);
  assert.notEqual(caught, null, `no violation within ${budget} seeds with ${JSON.stringify(bugs)}`);
  if (caught === null) return;
  const clean = simulate({ ...options, seed: caught.seed });
  assert.deepEqual(clean.violations, [], `seed ${caught.seed} fails even without the bug`);
}

test('doubleVote (a second vote in one term) is caught within 50 seeds', () => {
  assertCaught({ doubleVote: true }, 50);
});

test('applyUncommitted (applying before commit) is caught within 50 seeds', () => {
  assertCaught({ applyUncommitted: true }, 50);
});

test('commitOldTermEntries (Figure 8) is caught within 300 seeds of the leader-churn scenario', () => {
  assertCaught({ commitOldTermEntries: true }, 300, { profile: 'chaos', scenario: figure8 });
});
