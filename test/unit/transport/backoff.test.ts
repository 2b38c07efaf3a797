// Reconnect delays double per failure up to the cap, stay within [ceiling/2, ceiling] (jitter
// spreads members that lost a peer together), and a seed makes them repeatable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom } from '../../../src/base/random.js';
import { reconnectDelayMs } from '../../../src/transport/index.js';

const limits = { reconnectDelayMsBase: 50, reconnectDelayMsMax: 2000 };

test('delays grow exponentially with jitter and stop at the cap', () => {
  const random = new SeededRandom(42n);
  for (let failures = 1; failures <= 40; failures++) {
    const ceiling = Math.min(2000, 50 * 2 ** (failures - 1));
    for (let i = 0; i < 50; i++) {
      const delay = reconnectDelayMs(failures, limits, random);
      assert.ok(delay >= Math.floor(ceiling / 2) && delay <= ceiling, `${failures}: ${delay}`);
    }
  }
});

test('jitter spreads delays, and a seed repeats them', () => {
  const draw = (seed: bigint): number[] => {
    const random = new SeededRandom(seed);
    return Array.from({ length: 20 }, () => reconnectDelayMs(6, limits, random));
  };
  assert.deepEqual(draw(7n), draw(7n));
  assert.ok(new Set(draw(7n)).size > 10, 'not in lockstep');
});
