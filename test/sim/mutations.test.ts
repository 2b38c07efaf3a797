// Issue 23: the plain sweep (no scenario chosen for the bug) catches each planted core mutation by
// itself. For each one, a small fixed range of plain seeds (default or swarm profile, where the
// measured catch rate makes a short range enough) must contain at least one seed that a checker
// (not only a core assertion) catches, and every seed of the range must run clean without the bug.
// Catch rates over 2,000 seeds and the commands that measured them are in docs/STATUS.md (1b).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SimOptions } from '../../src/sim/index.js';
import { simulate } from '../../src/sim/index.js';

const coreAssertions = new Set(['assertion failed', 'exception']);

interface Case {
  readonly bugs: NonNullable<SimOptions['bugs']>;
  readonly profile?: 'swarm';
  readonly seeds: readonly [first: number, last: number];
}

// Seed ranges hold the first measured catches (readWithoutQuorum: default seeds 31 and 51;
// voteWithoutPersist: swarm seeds 2 and 70; appendPastGap: default seed 1 and most after it).
const cases: readonly Case[] = [
  { bugs: { readWithoutQuorum: true }, seeds: [1, 60] },
  { bugs: { voteWithoutPersist: true }, profile: 'swarm', seeds: [1, 80] },
  { bugs: { appendPastGap: true }, seeds: [1, 10] },
];

for (const { bugs, profile, seeds } of cases) {
  const name = Object.keys(bugs).join('+');
  const where = `${profile ?? 'default'} seeds ${seeds[0]}-${seeds[1]}`;
  test(`the plain ${where} catch ${name} and run clean without it`, (t) => {
    const caught: string[] = [];
    for (let seed = BigInt(seeds[0]); seed <= BigInt(seeds[1]); seed++) {
      const plain: SimOptions = { seed, ...(profile === undefined ? {} : { profile }) };
      const replay = `npm run sim -- --seed ${seed} --trace${profile === undefined ? '' : ` --profile ${profile}`}`;
      assert.deepEqual(simulate(plain).violations, [], `seed ${seed} fails without a bug; replay: ${replay}`);
      const result = simulate({ ...plain, bugs });
      const byChecker = result.violations.find((v) => !coreAssertions.has(v.invariant));
      if (byChecker !== undefined) caught.push(`${seed} (${byChecker.invariant})`);
    }
    assert.ok(caught.length > 0, `no ${where} catches ${name}`);
    t.diagnostic(`caught by seeds ${caught.join(', ')}`);
  });
}
