// Simulated clusters running the real MVCC state machine (src/mvcc on the in-memory engine):
// under seeded faults every member that reaches an applied index has the same content hash
// there (the checker compares them), snapshots of real MVCC state travel to lagging members, and
// linearizable reads see every acknowledged put. Fewer seeds than the register sweep (the content
// hash is recomputed per applied index); BATON_MVCC_SEEDS=N runs more.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mvccStateMachine, seedsToRun, simulate } from '../../src/sim/index.js';

test('real MVCC commands under faults: equal content hashes at equal applied indexes', () => {
  const count = Number(process.env['BATON_MVCC_SEEDS'] ?? 16);
  const fallback = Array.from({ length: count }, (_, i) => 7_000n + BigInt(i));
  let acknowledged = 0;
  let snapshotsSent = 0;
  for (const seed of seedsToRun({ fallback, env: {} })) {
    const run = simulate({ seed, stateMachine: mvccStateMachine() });
    assert.deepEqual(run.violations, [], `seed ${seed} with the mvcc state machine`);
    acknowledged += run.stats.acknowledged;
    snapshotsSent += run.stats.snapshotsSent;
  }
  assert.ok(acknowledged > count * 10, `writes were acknowledged (${acknowledged})`);
  assert.ok(snapshotsSent > 0, 'MVCC snapshots were installed on lagging members');
});
