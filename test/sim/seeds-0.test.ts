// Shard 0 of the default seed sweep: every seed draws its own scenario (3 or 5 voters, learners,
// loss, duplication, reordering, partitions, crashes with torn writes, pauses, membership changes,
// transfers, compaction) and must finish with no safety or liveness violation. Four shards so the
// test runner spreads them over both CI cores; BATON_SEEDS / BATON_SEED choose other seeds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSeeds, shardSeeds } from './run-seeds.js';

test('seed sweep shard 0: no violations', () => {
  const outcome = runSeeds(shardSeeds(0, process.env));
  assert.deepEqual(outcome.failures, []);
});
