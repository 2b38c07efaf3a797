// A member restarted on an older copy of its data directory (issue 23; docs/design/older-copy.md):
// its vote in a term and the entries it acknowledged are gone from its disk. With the peer ledger
// (src/raft/peer-ledger.ts) it asks its peers what it promised them before it votes or
// acknowledges, finds out, and stays out; with the check switched off (`--bug ignoreRegressed`)
// the same seeds break Raft's promises and the checkers say so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulate } from '../../src/sim/index.js';

// Seeds where the member restored on an older copy breaks a promise unless it is stopped.
const seeds = [108n, 130n, 164n, 174n];

for (const seed of seeds) {
  test(`seed ${seed}: the restored member finds out it went back in time, and nothing breaks`, () => {
    const result = simulate({ seed, olderCopy: true });
    assert.deepEqual(result.violations.map((v) => `${v.invariant}: ${v.detail}`), []);
    assert.equal(result.stats.regressedMembers, 1, 'the one restored member says so');
  });

  test(`seed ${seed}: with the check ignored, the checkers see a promise broken`, () => {
    const result = simulate({ seed, olderCopy: true, bugs: { ignoreRegressed: true } });
    const invariants = new Set(result.violations.map((v) => v.invariant));
    const safety = ['one vote per term', 'one leader per term', 'leader completeness', 'committed entry never changes', 'log matching'];
    assert.ok(safety.some((invariant) => invariants.has(invariant)), [...invariants].join(', '));
  });
}

test('with the ledger check on and no older copy, no member ever says it went back in time', () => {
  for (let seed = 1n; seed <= 40n; seed++) {
    const result = simulate({ seed, ledgerCheck: true });
    assert.deepEqual(result.violations.map((v) => `seed ${seed}: ${v.invariant}: ${v.detail}`), []);
    assert.equal(result.stats.regressedMembers, 0);
  }
});
