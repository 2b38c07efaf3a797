// Same seed, same run: two runs of one seed produce byte-identical traces (the basis of replay by
// seed), and a different seed produces a different one. Chaos seeds, so every fault model is in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulate } from '../../src/sim/index.js';

function traceOf(seed: bigint): string[] {
  const lines: string[] = [];
  simulate({ seed, profile: 'chaos', trace: (line) => lines.push(line) });
  return lines;
}

test('the same seed replays the same trace, byte for byte', () => {
  for (const seed of [1n, 42n, 0x5eedn]) {
    const first = traceOf(seed);
    const second = traceOf(seed);
    assert.ok(first.length > 100, 'a run has a substantial trace');
    assert.deepEqual(second, first, `seed ${seed} replayed differently`);
  }
});

test('tracing does not change the run', () => {
  const traced = simulate({ seed: 7n, profile: 'chaos', trace: () => {} });
  const silent = simulate({ seed: 7n, profile: 'chaos' });
  assert.equal(silent.steps, traced.steps);
  assert.deepEqual(silent.stats, traced.stats);
});

test('different seeds give different runs', () => {
  assert.notDeepEqual(traceOf(2n), traceOf(3n));
});
