// A member restarted on an older copy of its data directory (issue 23; docs/design/older-copy.md):
// its vote in a term and the entries it acknowledged are gone, so Raft's promises break. Members
// do not detect it yet; until they do, this shows the simulator's checkers see the damage (the
// opt-in fault `baton sim --older-copy`), so the detection, when built, has a failing seed to fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulate } from '../../src/sim/index.js';

test('restarted on an older copy, a member votes twice in a term and the checkers say so (seed 40)', () => {
  const result = simulate({ seed: 40n, olderCopy: true });
  const invariants = new Set(result.violations.map((v) => v.invariant));
  assert.ok(invariants.has('one vote per term'), [...invariants].join(', '));
});

test('the same seed without the fault runs clean', () => {
  const result = simulate({ seed: 40n });
  assert.deepEqual(result.violations.map((v) => v.invariant), []);
});
