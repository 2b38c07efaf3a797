// The production driver (src/server/driver.ts) under the same simulated faults and checkers as
// the sim's own driver: the sim supplies its log store, state machine, peers and timers, and
// watches its core. 200 seeds by default (BATON_SERVER_SEEDS to change), and replay by seed
// holds here too even though the driver is promise-based.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulateAsync } from '../../src/sim/index.js';

const seedCount = Number(process.env['BATON_SERVER_SEEDS'] ?? 200);

test(`the production driver keeps every invariant over ${seedCount} seeds`, async () => {
  const failures: string[] = [];
  for (let seed = 1n; seed <= BigInt(seedCount); seed++) {
    const result = await simulateAsync({ seed, driver: 'server' });
    for (const violation of result.violations) {
      failures.push(
        `seed ${seed}: ${violation.invariant} at step ${violation.step}: ${violation.detail.split('\n')[0]}\n` +
          `  reproduce with: npm run sim -- --seed ${seed} --driver server --trace`,
      );
    }
  }
  assert.deepEqual(failures, []);
});

test('a production-driver run replays byte for byte', async () => {
  const traceOf = async (seed: bigint): Promise<string[]> => {
    const lines: string[] = [];
    await simulateAsync({
      seed,
      driver: 'server',
      profile: 'chaos',
      trace: (line) => lines.push(line),
    });
    return lines;
  };
  const first = await traceOf(11n);
  assert.ok(first.length > 100, 'a run has a substantial trace');
  assert.deepEqual(await traceOf(11n), first);
});

test('seeds that found pipelined-driver bugs stay fixed (readysInFlightMax 8)', async () => {
  // 6876: an overloaded leader queued more than it could commit within the proposal timeout, so
  // nothing was acknowledged again. 40029: a restarted follower's read matched a late answer to
  // its previous incarnation's read context and was served at an older read index.
  for (const seed of [6876n, 40029n]) {
    const result = await simulateAsync({ seed, driver: 'server', profile: 'chaos' });
    assert.deepEqual(result.violations.map((v) => `${seed}: ${v.invariant}: ${v.detail}`), []);
  }
});
