// The simulator has teeth: with each deliberately broken core behaviour switched on (and two
// broken driver behaviours), it reports a violation from its own checkers (not just a core
// assertion) within a stated seed budget, and the seed that catches it runs clean once the bug
// is switched off again. The liveness checker gets the same proof with a transport that stalls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
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
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
  applyBytesMax: 4 * 1024 * 1024,
  uncommittedBytesMax: 64 * 1024 * 1024,
};

/** Acknowledging before the disk write only hurts when a crash lands inside a slow write. */
const slowDiskCrashes: Partial<Scenario> = {
  voterCount: 3,
  learnerCount: 0,
  diskLatencyMsMin: 5,
  diskLatencyMsMax: 20,
  faultIntervalMs: 150,
  leaderChurnRate: 0.3,
  faultWeights: { partition: 0, crash: 5, pause: 0, membership: 0, transfer: 1 },
};

const coreAssertions = new Set(['assertion failed', 'exception']);
type BugOptions = Omit<SimOptions, 'seed'>;

function firstCaught(
  options: BugOptions,
  budget: number,
): { seed: bigint; invariant: string } | null {
  for (let seed = 1n; seed <= BigInt(budget); seed++) {
    const result = simulate({ ...options, seed });
    const caught = result.violations.find((v) => !coreAssertions.has(v.invariant));
    if (caught !== undefined) return { seed, invariant: caught.invariant };
  }
  return null;
}

function assertCaught(options: BugOptions, budget: number): string {
  const caught = firstCaught(options, budget);
  const what = JSON.stringify({ bugs: options.bugs, driverBugs: options.driverBugs });
  assert.notEqual(caught, null, `no violation within ${budget} seeds with ${what}`);
  if (caught === null) return '';
  const { bugs: _bugs, driverBugs: _driverBugs, ...clean } = options;
  const replay = simulate({ ...clean, seed: caught.seed });
  assert.deepEqual(replay.violations, [], `seed ${caught.seed} fails even without ${what}`);
  return `caught by seed ${caught.seed}: ${caught.invariant}`;
}

test('doubleVote (a second vote in one term) is caught within 50 seeds', (t) => {
  t.diagnostic(assertCaught({ bugs: { doubleVote: true } }, 50));
});

test('applyUncommitted (applying before commit) is caught within 50 seeds', (t) => {
  t.diagnostic(assertCaught({ bugs: { applyUncommitted: true } }, 50));
});

test('commitOldTermEntries (Figure 8) is caught within 300 seeds of the leader-churn scenario', (t) => {
  t.diagnostic(
    assertCaught(
      { bugs: { commitOldTermEntries: true }, profile: 'chaos', scenario: figure8 },
      300,
    ),
  );
});

test('a driver that acknowledges before the disk write is caught within 100 crash-heavy seeds', (t) => {
  const options = {
    driverBugs: { messagesBeforeDurable: true },
    profile: 'chaos',
    scenario: slowDiskCrashes,
  } as const;
  t.diagnostic(assertCaught(options, 100));
});

test('reads served locally, without ReadIndex, are caught within 20 seeds', (t) => {
  t.diagnostic(assertCaught({ driverBugs: { localReads: true } }, 20));
});

test('a transport that never reports snapshot transfers fails liveness within 100 seeds', (t) => {
  t.diagnostic(assertCaught({ driverBugs: { noSnapshotReports: true } }, 100));
});
