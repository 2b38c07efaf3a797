// Issue 23: the plain sweep (no scenario chosen for the bug) catches each planted core mutation by
// itself. For each one, a small fixed range of plain seeds (default or swarm profile, where the
// measured catch rate makes a short range enough) must contain at least one seed that a checker
// (not only a core assertion) catches, and every seed of the range must run clean without the bug.
// Catch rates over 2,000 seeds and the commands that measured them are in docs/STATUS.md (1b).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SimOptions } from '../../src/sim/index.js';
import { simulate, simulateAsync } from '../../src/sim/index.js';

const coreAssertions = new Set(['assertion failed', 'exception']);

interface Case {
  readonly name: string;
  /** The planted bug, as SimOptions fields. */
  readonly bug: Pick<SimOptions, 'bugs' | 'storeBugs' | 'leaseBugs' | 'lockBugs'>;
  readonly profile?: 'swarm';
  /** The workload of the plain sweep (kv unless named: locks run on the server driver). */
  readonly workload?: 'locks';
  readonly seeds: readonly [first: number, last: number];
}

// Seed ranges hold the first measured catches (readWithoutQuorum: default seeds 31 and 51;
// voteWithoutPersist: swarm seeds 2 and 70; appendPastGap: default seed 1 and most after it).
// dedupOff: Request-IDs only matter where a client retries with one, the lock workload here
// (the register kv sweep sends none); locks seeds 3 and 5 are caught by the lock checker.
// lockWithoutLeaseCheck: only the lock workload takes locks; locks seed 9 is caught.
// commitOldTermEntries: the swarm's leader-storm region (scenario.ts); swarm seeds 208, 216 and
// 218 are caught.
const cases: readonly Case[] = [
  { name: 'readWithoutQuorum', bug: { bugs: { readWithoutQuorum: true } }, seeds: [1, 60] },
  { name: 'voteWithoutPersist', bug: { bugs: { voteWithoutPersist: true } }, profile: 'swarm', seeds: [1, 80] },
  { name: 'appendPastGap', bug: { bugs: { appendPastGap: true } }, seeds: [1, 10] },
  { name: 'commitOldTermEntries', bug: { bugs: { commitOldTermEntries: true } }, profile: 'swarm', seeds: [200, 220] },
  { name: 'dedupOff', bug: { storeBugs: { dedupOff: true } }, workload: 'locks', seeds: [3, 5] },
  { name: 'lockWithoutLeaseCheck', bug: { storeBugs: { lockWithoutLeaseCheck: true } }, workload: 'locks', seeds: [9, 10] },
];

for (const { name, bug, profile, workload, seeds } of cases) {
  const where = `${profile ?? 'default'}${workload === undefined ? '' : ` ${workload}`} seeds ${seeds[0]}-${seeds[1]}`;
  test(`the plain ${where} catch ${name} and run clean without it`, async (t) => {
    const caught: string[] = [];
    for (let seed = BigInt(seeds[0]); seed <= BigInt(seeds[1]); seed++) {
      const plain: SimOptions = {
        seed,
        ...(profile === undefined ? {} : { profile }),
        ...(workload === undefined ? {} : { workload, driver: 'server' }),
      };
      const run = (options: SimOptions) => (workload === undefined ? Promise.resolve(simulate(options)) : simulateAsync(options));
      const replay = `npm run sim -- --seed ${seed} --trace${profile === undefined ? '' : ` --profile ${profile}`}${workload === undefined ? '' : ` --workload ${workload}`}`;
      assert.deepEqual((await run(plain)).violations, [], `seed ${seed} fails without a bug; replay: ${replay}`);
      const result = await run({ ...plain, ...bug });
      const byChecker = result.violations.find((v) => !coreAssertions.has(v.invariant));
      if (byChecker !== undefined) caught.push(`${seed} (${byChecker.invariant})`);
    }
    assert.ok(caught.length > 0, `no ${where} catches ${name}`);
    t.diagnostic(`caught by seeds ${caught.join(', ')}`);
  });
}
